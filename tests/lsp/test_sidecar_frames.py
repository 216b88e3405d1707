"""Frames a client should never send, fed as raw bytes to a real `sunwell serve`: the sidecar neither dies nor
wedges. A frame it cannot use is logged and skipped up to the next header; a body that is not JSON-RPC gets a
JSON-RPC error; after each, the next request in the same write is answered. Its stdout stays pure protocol."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import SERVER
from sunwell.wire import protocol

HANG_GUARD = 60.0
"""Seconds to wait for an answer or an exit: generous, the machine is shared; only a wedged server reaches it."""

HEADER = re.compile(rb"(Content-Length: (\d+)|Content-Type: [^\r\n]*)\r\n")


def frame(message: Any) -> bytes:
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%b" % (len(body), body)


def commands(msg_id: int) -> bytes:
    return frame({"jsonrpc": "2.0", "id": msg_id, "method": protocol.COMMANDS, "params": {}})


class RawSidecar:
    """`python -m sunwell.lsp` over pipes; what it writes to stdout is read strictly, so any byte that is not
    a well-framed JSON message fails the test."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.received: list[dict[str, Any]] = []
        self.stderr = bytearray()
        self._stderr_task = asyncio.create_task(self._drain_stderr())

    async def _drain_stderr(self) -> None:  # the log must not fill the pipe and block the server
        while chunk := await self.proc.stderr.read(65536):
            self.stderr += chunk

    async def send(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def _message(self) -> dict[str, Any] | None:
        length = None
        while (line := await self.proc.stdout.readline()) != b"\r\n":
            if not line:
                assert length is None, "stdout ended inside a header"
                return None
            match = HEADER.fullmatch(line)
            assert match, f"stdout carried something that is not a header: {line[:200]!r}"
            length = int(match[2]) if match[2] else length
        assert length is not None
        message = json.loads(await self.proc.stdout.readexactly(length))
        self.received.append(message)
        return message

    async def answer(self, msg_id: Any) -> dict[str, Any]:
        """The response to `msg_id` (responses with other ids and notifications are kept in `received`)."""
        async def wait() -> dict[str, Any]:
            while (message := await self._message()) is not None:
                if "method" not in message and message.get("id") == msg_id:
                    return message
            raise AssertionError(f"the server closed stdout before answering {msg_id}; stderr:\n{self.log}")

        return await asyncio.wait_for(wait(), HANG_GUARD)

    async def errors(self, msg_id: Any, marker_id: int) -> list[dict[str, Any]]:
        """The error responses to `msg_id` that arrived before the answer to request `marker_id`."""
        await self.answer(marker_id)
        return [m["error"] for m in self.received if "error" in m and "id" in m and m["id"] == msg_id]

    async def finish(self) -> int:
        """shutdown + exit; the exit code. Reads stdout to its end, so any stray byte fails the test."""
        await self.send(frame({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"}))
        await self.answer("bye")
        await self.send(frame({"jsonrpc": "2.0", "method": "exit"}))
        return await self.wait_exit()

    async def wait_exit(self) -> int:
        async def rest() -> None:
            while await self._message() is not None:
                pass

        await asyncio.wait_for(rest(), HANG_GUARD)
        code = await asyncio.wait_for(self.proc.wait(), HANG_GUARD)
        await self._stderr_task
        return code

    @property
    def log(self) -> str:
        return self.stderr.decode(errors="replace")

    def peak_memory_mib(self) -> float:
        """The server's peak resident memory (Linux: VmHWM)."""
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(re.search(r"VmHWM:\s+(\d+) kB", status)[1]) / 1024


async def spawn(env: dict[str, str], workspace: Path, options: dict[str, Any] | None = None) -> RawSidecar:
    """`python -m sunwell.lsp` in `workspace`, initialized (with `options` as initializationOptions)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "sunwell.lsp", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=env, cwd=workspace, limit=2**20)
    sidecar = RawSidecar(proc)
    await sidecar.send(frame({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "processId": None, "rootUri": workspace.as_uri(), "capabilities": {},
        **({"initializationOptions": options} if options else {})}}))
    assert "capabilities" in (await sidecar.answer("init"))["result"]
    await sidecar.send(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    return sidecar


@pytest.fixture
async def raw(tmp_path, workspace):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "SUNWELL_"))}
    env.update(PYTHONPATH=str(SERVER), HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "config"),
               XDG_DATA_HOME=str(tmp_path / "xdg-data"), SUNWELL_DATA_DIR=str(tmp_path / "data"),
               SUNWELL_LOG_LEVEL="WARNING")
    sidecar = await spawn(env, workspace)
    yield sidecar
    if sidecar.proc.returncode is None:
        sidecar.proc.kill()
        await sidecar.proc.wait()


BODY = json.dumps({"jsonrpc": "2.0", "id": 99, "method": protocol.COMMANDS, "params": {}}).encode()
"""The body of a frame whose header is bad: it must be skipped, never run."""

BAD_FRAMES = {
    "a length of a terabyte": b"Content-Length: 1000000000000\r\n\r\n" + BODY,
    "a length just over the 64 MiB cap": b"Content-Length: %d\r\n\r\n" % (64 * 2**20 + 1) + BODY,
    "a length that is not a number": b"Content-Length: abc\r\n\r\n" + BODY,
    "a negative length": b"Content-Length: -5\r\n\r\n" + BODY,
    "a zero length": b"Content-Length: 0\r\n\r\n",
    "a length of 5000 digits": b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n" + BODY,
    "no Content-Length": b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + BODY,
    "a line that is no header": b"hello there\r\n\r\n" + BODY,
    "a body with no header at all": BODY,
    "a megabyte without a newline": b"x" * 2**20,
    "a header line cut by a stray byte": b"Content-Length: 5\r\x00\n\r\n" + BODY,
}


@pytest.mark.parametrize("bad", BAD_FRAMES.values(), ids=BAD_FRAMES.keys())
async def test_a_bad_frame_is_skipped_and_the_next_request_is_answered(raw, bad):
    await raw.send(bad + commands(1))  # one write: the good frame must be found right after the bad one
    assert (await raw.answer(1))["result"]["commands"]
    await raw.send(commands(2))
    assert (await raw.answer(2))["result"]["commands"]
    assert not [m for m in raw.received if m.get("id") == 99], "the body of a bad frame was run"
    assert await raw.finish() == 0
    assert "skipped a frame" in raw.log and "Traceback" not in raw.log


async def test_a_refused_length_names_the_limit_in_the_log(raw):
    await raw.send(b"Content-Length: 1000000000000\r\n\r\n" + BODY + commands(1))
    await raw.answer(1)
    assert await raw.finish() == 0
    assert "1000000000000 bytes" in raw.log and "64 MiB" in raw.log


async def test_frames_a_client_may_send_are_still_accepted(raw):
    """Content-Type, stray blank lines, and a body far longer than any header line."""
    typed = commands(1).replace(b"\r\n\r\n", b"\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n")
    padded = frame(BODY.replace(b'"id": 99', b'"id": 3').replace(b"{}", b"{" + b" " * 2**20 + b"}"))
    await raw.send(typed + b"\r\n\r\n" + commands(2) + padded)
    for msg_id in (1, 2, 3):
        assert (await raw.answer(msg_id))["result"]["commands"]
    assert await raw.finish() == 0
    assert "skipped" not in raw.log


NOT_JSON = {"broken JSON": b'{"jsonrpc": "2.0", "id": 5,', "not UTF-8": b"\xff\xfe\xfd"}


@pytest.mark.parametrize("body", NOT_JSON.values(), ids=NOT_JSON.keys())
async def test_a_body_that_is_not_json_gets_a_parse_error(raw, body):
    await raw.send(frame(body) + commands(1))
    assert [e["code"] for e in await raw.errors(None, 1)] == [-32700]
    assert await raw.finish() == 0
    assert "Traceback" not in raw.log


NOT_RPC = {"an array": ([1, 2], None), "a string": ("x", None), "an empty object": ({}, None),
           "no jsonrpc member": ({"id": 7, "method": protocol.COMMANDS}, 7),
           "no method, no result": ({"jsonrpc": "2.0", "id": 7}, None), "only jsonrpc": ({"jsonrpc": "2.0"}, None)}


@pytest.mark.parametrize(("body", "msg_id"), NOT_RPC.values(), ids=NOT_RPC.keys())
async def test_json_that_is_not_json_rpc_gets_invalid_request(raw, body, msg_id):
    await raw.send(frame(body) + commands(1))
    assert [e["code"] for e in await raw.errors(msg_id, 1)] == [-32600]
    assert await raw.finish() == 0
    assert "Traceback" not in raw.log


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the peak memory from /proc")
async def test_junk_without_a_newline_does_not_grow_memory(raw):
    """256 MiB with no newline, then a request: read in pieces and dropped, never held whole."""
    junk = b"x" * 2**20
    for _ in range(256):
        await raw.send(junk)
    await raw.send(b"\r\n" + commands(1))
    await raw.answer(1)
    assert raw.peak_memory_mib() < 200
    assert await raw.finish() == 0


async def test_input_that_ends_inside_a_frame_ends_the_server_cleanly(raw):
    await raw.send(b'Content-Length: 100\r\n\r\n{"jsonrpc": ')
    raw.proc.stdin.close()
    assert await raw.wait_exit() == 0
    assert "Traceback" not in raw.log

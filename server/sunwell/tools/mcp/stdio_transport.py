"""The stdio transport to an MCP server: the SDK's `stdio_client`, except for how stdout is read.

The SDK's reader joins each chunk of stdout onto what it holds of the current line and splits the whole again, so a
line of n bytes costs time in n squared (a 50 MB result took 77 s here, 12 s of 12.3 in that loop at 20 MB), and
holds all of it. Here stdout goes through `BoundedLines` (tools/mcp/oversize.py): linear, and a message over the
limit is skipped as it arrives, its request answered with a `too_large` error. `stdio_client` takes no other
reader, so this is a transport of our own in the shape the SDK's `Client` accepts (its `Transport` protocol): the
same process start (the server's own process group, the SDK's default environment under the server's) and the
same shutdown (stdin closed, 2 s to leave, SIGTERM to the group with the SDK's own helper, 2 s, SIGKILL). POSIX
only, as Sunwell is.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any, TextIO

import anyio
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import types
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from sunwell.tools.mcp.oversize import MAX_MESSAGE_BYTES, BoundedLines, Cut, Oversized, too_large_error

log = logging.getLogger(__name__)
GRACE = 2.0
"""Each step of the shutdown, as the SDK's: to leave after stdin closes, after SIGTERM, to be reaped."""
FLUSH = 0.5
"""For messages the session already handed over to reach stdin before it closes."""
_GONE = (anyio.ClosedResourceError, anyio.BrokenResourceError)


@asynccontextmanager
async def stdio_transport(server: StdioServerParameters, errlog: TextIO, limit: int = MAX_MESSAGE_BYTES
                          ) -> AsyncIterator[tuple[MemoryObjectReceiveStream[SessionMessage | Exception],
                                                   MemoryObjectSendStream[SessionMessage]]]:
    """Start the server; yield (read stream, write stream) for `mcp.Client`; stop it (and its process group) on
    leaving. Raises OSError when the command cannot be started."""
    process = await anyio.open_process([server.command, *server.args], stderr=errlog, cwd=server.cwd,
                                       env=get_default_environment() | (server.env or {}), start_new_session=True)
    to_session, from_server = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_server, from_session = anyio.create_memory_object_stream[SessionMessage](0)
    written = anyio.Event()

    async def read() -> None:
        assert process.stdout is not None
        lines = BoundedLines(limit)
        session_listens = True
        async with to_session:
            with suppress(anyio.EndOfStream, *_GONE, OSError):
                while True:  # to the end of stdout even once no one listens: a server blocked writing cannot leave
                    for item in lines.feed(await process.stdout.receive()):
                        message = _message(item, limit)
                        if message is None or not session_listens:
                            continue
                        try:
                            await to_session.send(message)
                        except _GONE:
                            session_listens = False

    async def write() -> None:
        assert process.stdin is not None
        try:
            async with from_session:
                async for message in from_session:
                    line = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(line.encode())
        except (*_GONE, OSError):
            await to_session.aclose()  # the server reads no more: the session sees the end instead of waiting
        finally:
            written.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read)
        tasks.start_soon(write)
        try:
            yield from_server, to_server
        finally:
            with anyio.CancelScope(shield=True):  # the server must stop even when the caller was cancelled
                from_server.close()
                to_server.close()
                with anyio.move_on_after(FLUSH):
                    await written.wait()
                await _stop(process)
            tasks.cancel_scope.cancel()


def _message(item: bytes | Cut, limit: int) -> SessionMessage | Exception | None:
    """What the session gets for one line of stdout: the message, the parse error (as the SDK hands it over), the
    `too_large` answer in place of a cut message, or nothing (a blank line, a cut message the server sent on its
    own)."""
    if isinstance(item, bytes):
        if not item.strip():
            return None
        try:
            return SessionMessage(types.jsonrpc_message_adapter.validate_json(item, by_name=False))
        except ValueError as exc:
            return exc
    if item.request_id is not None:
        log.info("MCP answer to request %r cut after %d bytes (over %d)", item.request_id, item.size, limit)
        return SessionMessage(too_large_error(item.request_id, limit))
    if item.method is not None:
        log.info("MCP message %s from the server dropped: over %d bytes", item.method, limit)
        return None
    return Oversized(item.size, limit)


async def _stop(process: Process) -> None:
    assert process.stdin is not None
    with suppress(OSError, *_GONE):
        await process.stdin.aclose()
    if not await _exited(process, GRACE):
        await terminate_posix_process_tree(process, GRACE)
        await _exited(process, GRACE)
    with anyio.move_on_after(GRACE):  # closes stdout too: a reader still draining it ends
        await process.aclose()


async def _exited(process: Process, within: float) -> bool:
    with anyio.move_on_after(within):
        await process.wait()
    return process.returncode is not None


@asynccontextmanager
async def closing_after_spawn(transport: Any, errlog: TextIO) -> Any:
    """The stdio transport, with our copy of the stderr pipe's write end closed once the process has it: then the
    pipe ends exactly when the server (and whatever it started) has gone."""
    try:
        async with transport as streams:
            errlog.close()
            yield streams
    finally:
        if not errlog.closed:
            errlog.close()

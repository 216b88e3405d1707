"""Start the local model server so that it answers, or say why not: used by scripts/start.sh and by the real-model
tier's fixture (tests/models/test_real_model.py), so both start it the same way.

    python scripts/local_model.py --url http://127.0.0.1:N/v1 --log FILE -- COMMAND...

starts COMMAND (scripts/llama_server.py and its arguments) in a session of its own, waits until `/v1/models` answers,
then asks one short completion: a CPU that reports AMX under a hypervisor that traps it loads the model fine and
dies of SIGILL at the first matrix product. When the server dies on it or does not answer, it starts COMMAND again
with `--no-repack` (no ggml extra buffer types) and says so in one line on stderr. It prints the server's pid (the
id of its process group) on stdout and leaves it running; when both tries fail it prints what failed, the log's last
lines and how to use a hosted model instead, and exits 1. Standard library only: it runs before anything else is
known to work.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

NO_REPACK = "--no-repack"  # scripts/llama_server.py's flag: ggml's extra buffer types off
HOSTED = ("To use a hosted model instead, set OPENAI_API_KEY or ANTHROPIC_API_KEY (SUNWELL_MODEL picks the model) "
          "and start again.")
LOG_LINES = 12
T = TypeVar("T")


class StartFailed(RuntimeError):
    """Neither try answered; the message says what failed, with the log's last lines and the hosted models."""


class ServerDied(RuntimeError):
    """The server died while a client waited on it; the message has its last log lines."""


class ModelServer:
    def __init__(self, proc: subprocess.Popen, url: str, log: Path, no_repack: bool) -> None:
        self.proc, self.url, self.log, self.no_repack = proc, url, log, no_repack

    def death(self) -> str | None:
        """How the server ended ("died of SIGILL", "exited with code 1"), or None while it runs."""
        code = self.proc.poll()
        if code is None:
            return None
        if code < 0:
            name = signal.Signals(-code).name
            why = " (an instruction the CPU reports but does not run)" if name == "SIGILL" else ""
            return f"died of {name}{why}"
        return f"exited with code {code}"

    def last_lines(self) -> str:
        lines = self.log.read_text(encoding="utf-8", errors="replace").splitlines()[-LOG_LINES:]
        return "".join(f"\n    {line}" for line in lines) or "\n    (empty)"

    def died_report(self) -> str:
        return f"the local model server {self.death()} during this call; last lines of {self.log}:" \
               + self.last_lines()

    def ends_soon(self) -> bool:
        """Whether the server is dead or dying: a client sees the connection drop a moment before the end."""
        try:
            self.proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            return False
        return True

    def run_client(self, args: list[str], *, timeout: float, **popen: object) -> subprocess.CompletedProcess:
        """Run a client of the server to its end (text output captured); ServerDied when the server dies first."""
        client = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)
        deadline = time.monotonic() + timeout
        while True:
            try:
                out, err = client.communicate(timeout=0.3)
                break
            except subprocess.TimeoutExpired:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    client.kill()
                    client.communicate()
                    if self.proc.poll() is None:
                        raise subprocess.TimeoutExpired(args, timeout) from None
                    raise ServerDied(self.died_report()) from None
        if client.returncode != 0 and self.ends_soon():
            raise ServerDied(f"{self.died_report()}\nthe client's last words:\n{err.strip()[-2000:]}")
        return subprocess.CompletedProcess(args, client.returncode, out, err)

    async def guard(self, awaitable: Awaitable[T]) -> T:
        """Await a call on the server; ServerDied when the server dies first, or under it."""
        task = asyncio.ensure_future(awaitable)
        while not task.done():
            await asyncio.wait({task}, timeout=0.3)
            if not task.done() and self.proc.poll() is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                raise ServerDied(self.died_report())
        if task.exception() is not None and await asyncio.to_thread(self.ends_soon):
            raise ServerDied(self.died_report()) from task.exception()
        return task.result()

    def stop(self) -> None:
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue


def _probe(server: ModelServer, ready_seconds: float, answer_seconds: float) -> str | None:
    """Why the server is no use (None: it answered a one-token completion)."""
    deadline = time.monotonic() + ready_seconds
    while True:
        if server.death():
            return f"{server.death()} before it was ready"
        try:
            with urllib.request.urlopen(f"{server.url}/models", timeout=2):
                break
        except OSError:
            if time.monotonic() > deadline:
                return f"was not ready after {ready_seconds:g} s"
            time.sleep(0.3)
    body = {"messages": [{"role": "user", "content": "Say hi"}], "max_tokens": 1, "temperature": 0}
    request = urllib.request.Request(f"{server.url}/chat/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=answer_seconds) as reply:
            json.load(reply)["choices"][0]
        return None
    except (OSError, http.client.HTTPException, ValueError, LookupError, TypeError) as exc:
        if server.ends_soon():
            return f"{server.death()} on its first answer"
        if isinstance(exc, TimeoutError) or isinstance(getattr(exc, "reason", None), TimeoutError):
            return f"did not answer a one-token completion in {answer_seconds:g} s"
        return f"did not answer a one-token completion ({exc})"


def _launch(command: list[str], url: str, log: Path, no_repack: bool) -> ModelServer:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a" if no_repack else "w", encoding="utf-8") as out:
        if no_repack:
            out.write(f"---- started again with {NO_REPACK} ----\n")
            out.flush()
        argv = [*command, NO_REPACK] if no_repack else command
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    return ModelServer(proc, url, log, no_repack)


def start(command: list[str], url: str, log: Path, *, ready_seconds: float = 60, answer_seconds: float = 120,
          say: Callable[[str], None] = print) -> ModelServer:
    """A server of `command` that has answered a completion: as it is, else with NO_REPACK; StartFailed else."""
    failures: list[str] = []
    for no_repack in (False, True):
        server = _launch(command, url, Path(log), no_repack)
        try:
            why = _probe(server, ready_seconds, answer_seconds)
        except BaseException:  # Ctrl-C while it starts: nothing is left running
            server.stop()
            raise
        if why is None:
            return server
        server.stop()
        failures.append(why)
        if not no_repack:
            say(f"the local model server {why}; starting it again without ggml's extra buffer types ({NO_REPACK}: "
                "its weights are not repacked for this CPU's matrix instructions)")
    tries = (f"with and without ggml's extra buffer types ({NO_REPACK}) it {failures[0]}" if failures[0] == failures[1]
             else f"with ggml's extra buffer types it {failures[0]}, without them ({NO_REPACK}) it {failures[1]}")
    raise StartFailed(f"the local model server did not start: {tries}. Last lines of {log}:{server.last_lines()}\n"
                      + HOSTED)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the server's OpenAI base URL, http://HOST:PORT/v1")
    parser.add_argument("--log", required=True, type=Path, help="the server's log file (both tries)")
    parser.add_argument("command", nargs="+", help="the server's command line, after --")
    args = parser.parse_args()
    say = lambda line: print(f"local-model: {line}", file=sys.stderr)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # start.sh's exit: the try in flight is stopped
    try:
        server = start(args.command, args.url, args.log, say=say)
    except StartFailed as failed:
        say(str(failed))
        return 1
    except OSError as exc:  # no log folder to be had, no such command
        say(f"could not start the local model server: {exc}")
        return 1
    except KeyboardInterrupt:  # the try in flight is stopped already
        return 130
    print(server.proc.pid)
    return 0


if __name__ == "__main__":
    sys.exit(main())

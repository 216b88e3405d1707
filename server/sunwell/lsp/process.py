"""What the sidecar does to its own process: stdout is the protocol's alone, and logs go to stderr and the client.

A stray `print`, or a child process that inherits fd 1, would corrupt the JSON-RPC stream; one that inherits fd 0
could eat the client's messages. So the protocol gets private copies of both, and fds 0 and 1 become /dev/null
and stderr for everyone else.
"""

from __future__ import annotations

import asyncio
import gc
import io
import logging
import os
import sys
import threading
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from sunwell.clipping import CappedLogRecords
from sunwell.lsp.failures import UNPARSEABLE, RequestFailed


class ClientLogHandler(logging.Handler):
    """Sunwell's own warnings and errors, also as `window/logMessage` (the client's output channel)."""

    _busy = threading.local()

    def __init__(self, server: LanguageServer, level: int = logging.WARNING) -> None:
        super().__init__(level)
        self.server = server

    def emit(self, record: logging.LogRecord) -> None:
        if self.server.protocol.writer is None or getattr(self._busy, "active", False):
            return
        self._busy.active = True  # sending may log; that must not come back here
        try:
            kind = (types.MessageType.Error if record.levelno >= logging.ERROR else
                    types.MessageType.Warning if record.levelno >= logging.WARNING else types.MessageType.Info)
            self.server.window_log_message(types.LogMessageParams(type=kind, message=self.format(record)))
        except OSError:  # the client is gone (a broken pipe at exit): there is no one to tell
            pass
        except Exception:  # noqa: BLE001 - a handler reports its own failures, as logging's handlers do
            self.handleError(record)
        finally:
            self._busy.active = False


def _unless_already_answered(record: logging.LogRecord) -> bool:
    """Drops pygls' traceback for a request answered with invalid params or RequestFailed, and its reader's for a
    body that is not JSON (answered with Parse Error): the answer says it, and the sidecar logs one line."""
    error = record.exc_info[1] if record.exc_info else None
    if isinstance(error, UNPARSEABLE):
        return record.name != "pygls.server"  # the reader's logger; elsewhere, such an error is our bug
    return not isinstance(error, (JsonRpcInvalidParams, RequestFailed))


def configure_logging(server: LanguageServer, level: str = "WARNING") -> None:
    """Everything to stderr; Sunwell's own records also to the client. Never stdout: that is the protocol.
    Records are capped in both, and credentials masked from the first engine on (`configuration.mask_logs`)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(_unless_already_answered)
    handler.addFilter(CappedLogRecords())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    client = ClientLogHandler(server)
    client.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    client.addFilter(CappedLogRecords())
    logging.getLogger("sunwell").addHandler(client)


class LoopFlushedStream:
    """The protocol's stdout: pygls flushes after every message; here the flush waits until the event loop has
    nothing else ready, so a burst of events (a fast stream) leaves in a few writes instead of one each. The
    buffer still goes out whenever it fills, and order is kept: every message goes through this one buffer, in
    one `write` (BufferedWriter locks, so a log message sent from a worker thread cannot split another)."""

    def __init__(self, raw: Any, buffer_size: int = 16_384) -> None:
        self.raw = raw if buffer_size <= 0 else io.BufferedWriter(raw, buffer_size)
        self._pending = False

    def write(self, data: bytes) -> int:
        return self.raw.write(data)

    def flush(self) -> None:
        if self._pending:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.raw.flush()
            return
        self._pending = True
        loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._pending = False
        try:
            self.raw.flush()
        except (OSError, ValueError):  # the client is gone, or the stream was closed at exit
            pass

    def close(self) -> None:
        self._flush()
        self.raw.close()


def claim_stdio() -> tuple[Any, Any]:
    """The protocol's own copies of fds 0 and 1; fd 0 becomes /dev/null and fd 1 stderr, so a stray `print`
    or a child process that inherits them can neither corrupt the stream nor steal its input."""
    try:
        stdin = os.fdopen(os.dup(sys.stdin.fileno()), "rb")
        stdout = LoopFlushedStream(os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0))
    except (AttributeError, OSError, ValueError):  # no real file descriptors (embedded, tests)
        return sys.stdin.buffer, LoopFlushedStream(sys.stdout.buffer, 0)
    sys.stdout.flush()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(sys.stderr.fileno(), 1)
    sys.stdout = sys.stderr
    return stdin, stdout


def end_of_start() -> None:
    """The garbage collector back on once the first engine is built. `sunwell serve` starts with it off:
    the imports and the engine make objects that live as long as the process, and collecting while they are made
    only scans them again and again (~40 ms of a ~600 ms start, tests/bench/bench_sidecar.py). They are frozen
    out of later collections."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()

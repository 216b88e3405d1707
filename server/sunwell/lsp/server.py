"""`sunwell serve`: the sidecar, a pygls language server assembled by `create_server` from feature modules.

Each feature module has a `setup(server)` that registers its handlers (esbonio's pattern); the server object only
holds what they share: the settings, the engine, the lens registry and the background tasks. The engine, YAML and
the SDKs are imported after `initialize` is answered, because the editor waits for that answer (the feature
modules import the engine floor inside their handlers, the one thing they import there); what the engine's
hooks start (the SDK import, lens discovery) waits a moment more, until the client's first requests are answered.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import json
import logging
import os
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.exceptions import (
    FeatureRequestError,
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
)
from pygls.lsp.server import LanguageServer
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    lsp_method,
)

from sunwell import __version__
from sunwell.clipping import MESSAGE_LIMIT, clip
from sunwell.lsp.failures import UNPARSEABLE, RequestFailed, Unavailable
from sunwell.wire import protocol

__all__ = ["RequestFailed", "SunwellServer", "Unavailable", "create_server"]
from sunwell.lsp.framing import FrameReader
from sunwell.lsp.process import claim_stdio, configure_logging
from sunwell.wire.options import InitializationOptions
from sunwell.wire.protocol import InvalidParams

if TYPE_CHECKING:
    from pydantic import BaseModel

    from sunwell.agent.engine import Engine
    from sunwell.config import Settings
    from sunwell.lens.registry import LensRegistry

    M = TypeVar("M", bound=BaseModel)

log = logging.getLogger(__name__)

FEATURES: tuple[str, ...] = (
    "sunwell.lsp.configuration",
    "sunwell.lsp.chat",
    "sunwell.lsp.sessions",
    "sunwell.lsp.catalog",
    "sunwell.lsp.lens_features",
    "sunwell.lsp.mcp",
    "sunwell.lsp.learned",
    "sunwell.lsp.processes",
    "sunwell.lsp.worktrees",
)
"""Modules with a `setup(server)`, loaded in this order."""

Hook = Callable[[], Awaitable[None] | None]

ENGINE_HOOKS_DELAY = 0.3
"""Seconds from a new engine to its hooks. They start work in threads (the SDK import, the lens files' discovery)
that would hold the GIL while the client's first requests, sent right after `initialized`, wait for answers."""


class SunwellProtocol(LanguageServerProtocol):
    """pygls' protocol with four gaps closed: a standard request whose params do not fit lsprotocol's types gets
    a -32602 answer (pygls would log it and leave the client waiting), JSON that is no JSON-RPC message gets
    -32600 (pygls fails on it with tracebacks), a late answer to a request we gave up on (an approval that
    timed out) is dropped instead of failing on a cancelled future, and an error answer is a few lines at most,
    whatever it quotes of the request."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        if "jsonrpc" in data and "method" not in data and not ("id" in data and ("result" in data or "error" in data)):
            return data  # no request, notification or response (pygls would fail on it): `handle_message` answers
        try:
            return super().structure_message(data)
        except JsonRpcException:
            if "id" in data and "method" in data:  # a request: it must be answered
                self.answer_error(data["id"], JsonRpcInvalidParams(f"{data['method']}: invalid params"))
                return _Ignored(method="$/sunwell/ignored", jsonrpc="2.0", params=None)
            raise

    def handle_message(self, message: Any) -> None:
        if not hasattr(message, "jsonrpc"):  # an array, a scalar, or an object that is no JSON-RPC message
            # The id of what looks like a request; a response's id is one of ours, and answering it would confuse.
            msg_id = message.get("id") if isinstance(message, dict) and "method" in message else None
            log.warning("answered a message that is not JSON-RPC with Invalid Request: %.80s", json.dumps(message))
            self.answer_error(msg_id if isinstance(msg_id, int | str) else None, JsonRpcInvalidRequest())
            return
        super().handle_message(message)

    def answer_error(self, msg_id: int | str | None, error: JsonRpcException) -> None:
        if msg_id is not None:
            self._send_response(msg_id, error=error.to_response_error())
            return
        # pygls leaves out an id that is None, but JSON-RPC wants `"id": null` when the id cannot be known.
        body = {"jsonrpc": "2.0", "id": None, "error": {"code": error.code, "message": error.message}}
        self._send_raw(json.dumps(body).encode(), "an error")

    def _send_response(self, msg_id: Any, result: Any = None, error: types.ResponseError | None = None) -> None:
        if error is not None and len(error.message) > MESSAGE_LIMIT:  # pygls' own quote the request: a method name
            error = types.ResponseError(code=error.code, message=clip(error.message, MESSAGE_LIMIT), data=error.data)
        super()._send_response(msg_id, result, error)

    def _handle_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        future = self._request_futures.get(msg_id)
        if future is not None and future.cancelled():
            self._request_futures.pop(msg_id, None)
            log.info("dropped the late answer to request %s", msg_id)
            return
        super()._handle_response(msg_id, result, error)

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Generator[Any, Any, None]:
        """Over TCP (debugging) `exit` closes the server: pygls' SystemExit would only be logged by asyncio, in
        the connection's task, and the server would keep listening."""
        if getattr(self._server, "transport", "stdio") == "tcp":
            self._server.shutdown()
            return
        yield from super().lsp_exit(*args)

    def notify_raw(self, method: str, params_json: str) -> None:
        """A notification whose params are JSON text already, framed here. The chat stream's hot path: pygls'
        `notify` runs every event through cattrs and `json.dumps` first, most of the cost of an event."""
        self._send_raw(f'{{"jsonrpc":"2.0","method":"{method}","params":{params_json}}}'.encode(), method)

    def _send_raw(self, body: bytes, what: str) -> None:
        if self.writer is None:
            return
        try:
            outcome = self.writer.write(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
        except OSError as exc:  # the client is gone; the turn ends when the loop does
            log.debug("cannot send %s: %s", what, exc)
            return
        if inspect.isawaitable(outcome):
            asyncio.ensure_future(outcome)

    def forget_request(self, msg_id: str) -> None:
        """Give up on an outgoing request: tell the client (it can close its prompt) and ignore any answer."""
        self._request_futures.pop(msg_id, None)
        self.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))


class _Ignored:
    """A notification nobody handles: what a malformed request becomes once it has been answered."""

    def __init__(self, method: str, jsonrpc: str, params: Any) -> None:
        self.method, self.jsonrpc, self.params = method, jsonrpc, params


def json_converter() -> Any:
    """lsprotocol's converter without pygls' habit of turning the params and results of custom methods into
    namedtuples: ours are parsed by pydantic, and namedtuples mangle keys that are not identifiers."""
    converter = get_converter()
    for message_type in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(message_type, lambda data, cls: cls(**data))
    return converter


class SunwellServer(LanguageServer):
    protocol: SunwellProtocol

    def __init__(self) -> None:
        super().__init__("sunwell", __version__, protocol_cls=SunwellProtocol, converter_factory=json_converter,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.transport = "stdio"
        """Or "tcp" (`--tcp`, for debugging)."""
        self.root: Path = Path.cwd()
        """The workspace: the jail root, and where lens files are found."""
        self.options = InitializationOptions()
        self.startup_problems: list[str] = []
        """Option problems found in `initialize`, shown once the client is ready for messages."""
        self.settings: Settings | None = None
        self.lenses: LensRegistry | None = None
        self._engine: Engine | None = None
        self.worktree_engines: dict[Path, Engine] = {}
        """The engines of worktree sessions' checkouts, by checkout (lsp/worktrees.py)."""
        self._engine_error: str | None = "the sidecar is not initialized yet"
        self._tasks: set[asyncio.Task[Any]] = set()
        self._engine_hooks: list[Hook] = []
        self._shutdown_hooks: list[Hook] = []
        self._stopped = False

    # -- what the feature modules share

    @property
    def has_engine(self) -> bool:
        return self._engine is not None

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            raise Unavailable(self._engine_error or "the engine is not available")
        return self._engine

    def set_engine(self, engine: Engine | None, error: str | None = None) -> None:
        changed = engine is not None and engine is not self._engine
        self._engine, self._engine_error = engine, error
        if not changed:
            return
        try:
            asyncio.get_running_loop().call_later(ENGINE_HOOKS_DELAY, self._engine_hooks_for, engine)
        except RuntimeError:  # no event loop (a test building the server by hand): now
            self._engine_hooks_for(engine)

    def _engine_hooks_for(self, engine: Engine) -> None:
        if engine is self._engine and not self._stopped:  # not replaced or shut down in the meantime
            self.run_hooks(self._engine_hooks)

    def parse(self, model: type[M], params: Any, method: str) -> M:
        try:
            return protocol.parse(model, params, method)
        except InvalidParams as exc:
            raise JsonRpcInvalidParams(str(exc)) from None

    def send_event(self, event_json: str) -> None:
        """A `sunwell/chatEvent` whose params (the event) are JSON text."""
        self.protocol.notify_raw(protocol.CHAT_EVENT, event_json)

    def show_message(self, message: str, level: types.MessageType = types.MessageType.Warning) -> None:
        log.log(_LOG_LEVELS.get(level, logging.INFO), "%s", message)
        self.window_show_message(types.ShowMessageParams(type=level, message=f"Sunwell: {message}"))

    # -- lifecycle

    def on_engine(self, hook: Hook) -> None:
        """Run `hook` each time a new engine is in place: at `initialized`, and after a settings change that
        needed a new one (another data dir)."""
        self._engine_hooks.append(hook)

    def on_shutdown(self, hook: Hook) -> None:
        self._shutdown_hooks.append(hook)

    def run_hooks(self, hooks: Iterable[Hook]) -> None:
        for hook in hooks:
            outcome = hook()
            if asyncio.iscoroutine(outcome):
                self.run_task(outcome)

    def stop(self) -> None:
        self._stopped = True
        self.run_hooks(self._shutdown_hooks)

    def run_task(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """A tracked background task: kept alive until done, and its failure logged rather than lost."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task failed", exc_info=task.exception())

    def report_server_error(self, error: Exception, source: Any) -> None:
        """pygls shows every error in a popup; a failed request was answered and logged already, a body that is
        not JSON is answered here, and the rest are our bugs, for stderr and the output channel."""
        if source is JsonRpcException and isinstance(error, UNPARSEABLE):  # pygls' reader: a body is not JSON
            log.warning("answered a message that is not JSON with Parse Error: %s", error)
            self.protocol.answer_error(None, JsonRpcParseError())
        elif source is not FeatureRequestError:
            log.error("%s: %s", getattr(source, "__name__", source), error)


_LOG_LEVELS = {types.MessageType.Error: logging.ERROR, types.MessageType.Warning: logging.WARNING,
               types.MessageType.Info: logging.INFO, types.MessageType.Log: logging.DEBUG}


def create_server(modules: Iterable[str] = FEATURES) -> SunwellServer:
    """A sidecar with the given feature modules (each module's `setup(server)` registers its handlers)."""
    server = SunwellServer()
    for name in modules:
        importlib.import_module(name).setup(server)
    return server


def serve(tcp: bool = False, host: str = "127.0.0.1", port: int = 2087, log_level: str = "WARNING") -> int:
    """Run the sidecar until the client says `exit` (or closes the stream). Returns the exit code."""

    server = create_server()
    configure_logging(server, log_level)
    try:
        if tcp:
            server.transport = "tcp"
            server.start_tcp(host, port)
        else:
            stdin, stdout = claim_stdio()
            server.start_io(FrameReader(stdin), stdout)  # type: ignore[arg-type]  # reads as pygls reads stdin
    finally:
        server.stop()
    return 0


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(prog="sunwell serve", description="The Sunwell sidecar (LSP).")
    parser.add_argument("--tcp", action="store_true", help="listen on TCP instead of stdio (for debugging)")
    parser.add_argument("--host", default="127.0.0.1", help="TCP address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=2087, help="TCP port (default 2087)")
    parser.add_argument("--log-level", default=os.environ.get("SUNWELL_LOG_LEVEL", "WARNING"),
                        choices=["DEBUG", "INFO", "WARNING", "ERROR"], type=str.upper,
                        help="stderr log level (default WARNING, or SUNWELL_LOG_LEVEL)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return serve(tcp=args.tcp, host=args.host, port=args.port, log_level=args.log_level)

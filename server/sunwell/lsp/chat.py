"""`sunwell/chat`: one user line, one turn of the engine; its events stream as `sunwell/chatEvent` notifications.
`sunwell/resume` takes up a session's interrupted or failed last turn (`Session.resume`), answered the same way.

The params become a line of the engine's session (agent/session.py), which decides between a `::command` and a turn,
attaches the mentions and keeps what commands change. The request's own task runs the line, so the standard
`$/cancelRequest` cancels it: the engine ends the turn with `done` (status `cancelled`) and stops a running tool.
Every event of a turn carries its session and turn ids, so two turns in two sessions can run at once; two in the
same session wait for each other. Whatever happens, the client gets exactly one `done` per chat, before the answer,
but for a line refused before anything ran: one that names a turn to replace (`replaceTurn`) that its session's
conversation does not hold (invalid params), or sent while a turn runs in that session (RequestFailed).

Its imports of the engine floor (agent/, tools/, config/) are in the handlers: the sidecar answers `initialize`
before it loads the engine (lsp/server.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcInvalidParams

from sunwell.errors import InvalidReplace, SessionBusy, SunwellError
from sunwell.lsp.failures import RequestFailed
from sunwell.lsp.worktrees import worktree_turn
from sunwell.wire.events import DoneEvent
from sunwell.wire.messages import WireModel
from sunwell.wire.protocol import CHAT, RESUME, ChatParams, ChatResult, ResumeParams

if TYPE_CHECKING:
    from sunwell.agent.engine import Engine
    from sunwell.lsp.server import SunwellServer
    from sunwell.wire.events import Event

log = logging.getLogger(__name__)


def setup(server: SunwellServer) -> None:
    server.on_engine(lambda: warm_up(server))

    @server.feature(CHAT)
    async def chat(ls: SunwellServer, params: Any) -> dict[str, Any]:
        return _result(await run_chat(ls, ls.parse(ChatParams, params, CHAT)))

    @server.feature(RESUME)
    async def resume(ls: SunwellServer, params: Any) -> dict[str, Any]:
        return _result(await run_resume(ls, ls.parse(ResumeParams, params, RESUME)))


def _result(done: DoneEvent) -> dict[str, Any]:
    return ChatResult(session=done.session, turn=done.turn, status=done.status, tool_calls=done.tool_calls,
                      usage=done.usage, error=done.error).wire()


def warm_up(ls: SunwellServer) -> None:
    """Import the configured provider's SDK (about a second) while the user is still typing the first line. A
    daemon thread: an `exit` that comes first must not wait for it."""
    engine = ls.engine

    def load() -> None:
        from sunwell.agent.session import Session  # in the thread: the session API loads the chat commands

        try:
            Session(engine).warm_up()
        except Exception as exc:  # noqa: BLE001 - the first turn reports the same problem properly
            log.debug("warm-up skipped: %s", exc)

    threading.Thread(target=load, name="sunwell-warm-up", daemon=True).start()


class Relay:
    """Sends one turn's events to the client and remembers where the stream is, so that a turn that dies
    before its `done` (or never starts) still ends with one, numbered after the last event sent."""

    def __init__(self, ls: SunwellServer, session: str | None) -> None:
        self.ls = ls
        self.session, self.turn, self.next_seq = session or "", "", 0
        self.tool_calls = 0
        self.done: DoneEvent | None = None

    def __call__(self, event: Event) -> None:
        self.session, self.turn, self.next_seq = event.session, event.turn, event.seq + 1
        if event.type == "toolCall":
            self.tool_calls += 1
        elif event.type == "done":
            self.done = event
        self.ls.send_event(wire_json(event))

    def finish(self, status: str, error: str | None = None) -> DoneEvent:
        from sunwell.agent.turn import new_turn_id

        done = DoneEvent(status=status, tool_calls=self.tool_calls, usage=None, error=error,
                         session=self.session, turn=self.turn or new_turn_id(), seq=self.next_seq)
        self(done)
        return done


def wire_json(event: Event) -> str:
    """The event's wire form as JSON text. pydantic writes it directly, three times as fast as `wire()` and then
    `json.dumps`, unless the event's class shapes its own `wire()` (DoneEvent leaves out a null `error`)."""
    if type(event).wire is WireModel.wire:
        return event.model_dump_json(by_alias=True)
    return json.dumps(event.wire())


async def run_chat(ls: SunwellServer, request: ChatParams) -> DoneEvent:
    from sunwell.agent.attached_images import ImageInput
    from sunwell.agent.chat import Overrides, UserInput
    from sunwell.agent.mentions import Mention
    from sunwell.agent.session import Session

    async def submit(relay: Relay, engine: Engine | None = None, session: str | None = request.session) -> DoneEvent:
        line = UserInput(request.text, [Mention(**mention.model_dump()) for mention in request.mentions],
                         Overrides(model=request.model, trust=request.trust, lens=request.lens),
                         replace_turn=request.replace_turn,
                         images=[ImageInput(data=image.data, path=image.path, label=image.path or f"image {n}")
                                 for n, image in enumerate(request.images, 1)])
        return (await Session(engine or ls.engine, session).submit(line, relay)).done

    if request.worktree is not None:
        return await worktree_turn(ls, request.worktree, request.text, request.session, lambda engine, session:
                                   _relayed(ls, session, lambda relay: submit(relay, engine, session)),
                                   request.worktree_base)
    return await _relayed(ls, request.session, submit)


async def run_resume(ls: SunwellServer, request: ResumeParams) -> DoneEvent:
    from sunwell.agent.chat import Overrides
    from sunwell.agent.session import Session

    async def resume(relay: Relay) -> DoneEvent:
        return await Session(ls.engine, request.session).resume(relay, Overrides(model=request.model))

    return await _relayed(ls, request.session, resume)


async def _relayed(ls: SunwellServer, session: str | None, turn: Callable[[Relay], Awaitable[DoneEvent]]) -> DoneEvent:
    """`turn` with its events relayed; whatever happens, the client gets one `done`, then the answer."""
    relay = Relay(ls, session)
    try:
        return await turn(relay)
    except asyncio.CancelledError:
        if relay.done is None:  # cancelled before the engine's turn began: the client still gets its `done`
            relay.finish("cancelled")
        raise
    except (InvalidReplace, SessionBusy) as exc:  # refused before anything ran: an error answer, no turn
        raise (JsonRpcInvalidParams if isinstance(exc, InvalidReplace) else RequestFailed)(str(exc)) from None
    except Exception as exc:  # could not start (no model, unknown session, unusable data dir) or a bug
        if not _is_setup_problem(exc):
            log.exception("chat turn %s failed", relay.turn or "(not started)")
        if relay.done is not None:
            return relay.done
        return relay.finish("error", str(exc) or type(exc).__name__)


def _is_setup_problem(exc: Exception) -> bool:
    return isinstance(exc, SunwellError)  # no model, unknown session, unusable data dir: no traceback

"""A conversation as every front end drives it: a line in (`UserInput`), events out to a sink, its `done` back.

`sunwell run`, `sunwell chat` and the sidecar only translate their terminal or wire to this (STYLE.md 13, after
openai/codex's Op/Event protocol). The session decides whether a line is a `::command` or a turn; the turn attaches
what the line mentions within the window and the jail it uses itself (Engine.run_turn), so nothing is resolved twice.
What the commands change (`ChatState`) is kept by the engine, per session (agent/live.py): a front end may ask for
the session anew for each line, as the sidecar does, and finds it; a new chat's state moves to the session its first
turn makes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sunwell.agent.chat import ChatState, Overrides, UserInput
from sunwell.agent.commands import run_command
from sunwell.agent.replay import replay
from sunwell.agent.resume import NothingToResume, logged_running, lost_note, resume_point
from sunwell.agent.sessions import SessionInfo, SessionNotFound, SessionStore
from sunwell.agent.turn import Sink, new_turn_id
from sunwell.agent.usage import session_usage, turn_line
from sunwell.clipping import clip
from sunwell.commands_spec import Command, parse_command
from sunwell.errors import InvalidReplace, SessionBusy, SetupError, SunwellError
from sunwell.model_strings import ModelSpec
from sunwell.tools.workspace.safe_write import remove_orphans
from sunwell.vocabulary import Trust
from sunwell.wire.events import CommandOutputEvent, DoneEvent, Event, SessionEvent
from sunwell.wire.messages import Message
from sunwell.wire.usage import SessionUsage

if TYPE_CHECKING:
    from sunwell.agent.engine import Engine


@dataclass(frozen=True)
class LineResult:
    done: DoneEvent
    exit: bool = False
    """`::exit`: the terminal chat ends."""


class Session:
    """The stored session `session`, or a new chat (None) until its first turn stores it."""

    def __init__(self, engine: Engine, session: str | None = None, *, terminal: bool = False) -> None:
        self._engine, self._asked, self._terminal = engine, session, terminal
        self._state: ChatState | None = None

    @property
    def id(self) -> str | None:
        return self._state.session if self._state is not None else self._asked

    @property
    def state(self) -> ChatState:
        """What the chat's commands changed; the engine keeps it from the first time it is asked for."""
        if self._state is None:
            self._state = self._engine.live.chat(self._asked)
            self._state.terminal = self._terminal
        return self._state

    def apply(self, overrides: Overrides) -> None:
        """Settings that hold from now on, as `::model`, `::trust` and `::lens` set them (checked by the next turn,
        which refuses a model or lens it cannot use)."""
        self.state.apply(overrides)

    async def submit(self, line: UserInput, sink: Sink) -> LineResult:
        """One line to its `done`: a `::command` is answered (`commandOutput`, then `done`, no model asked; its
        mentions are not read), any other line is a turn. Raises what a turn raises before it starts (SetupError,
        SessionStoreError); a line that replaces a turn is refused while a line runs in the session (SessionBusy),
        and when it is a command or names no turn of the session's conversation (InvalidReplace)."""
        command = parse_command(line.text)  # once per line: whatever answers it is given what was read here
        if line.replace_turn is not None and command is not None:
            raise InvalidReplace("a ::command is not part of the conversation: it cannot replace a turn")
        async with self._one_line(line.replace_turn):
            self.apply(line.overrides)
            if command is None:
                return LineResult(await self._turn(line, sink))
            return await self._command(command, sink)

    async def turn(self, line: UserInput, sink: Sink) -> DoneEvent:
        """`line` as a turn for the model, even when it looks like a `::command` (`sunwell run`'s prompt is one)."""
        async with self._one_line(line.replace_turn):
            self.apply(line.overrides)
            return await self._turn(line, sink)

    async def command(self, command: Command, sink: Sink) -> LineResult:
        """A `::command`, as `parse_command` read its line; `::run` answers with a turn."""
        async with self._one_line():
            return await self._command(command, sink)

    async def resume(self, sink: Sink, overrides: Overrides | None = None) -> DoneEvent:
        """Take up the session's last turn where its log ends, when it was interrupted (its process died) or ended
        in a provider error (agent/resume.py): same turn id, `seq` going on, with the settings it ran with (the
        model, trust, lens and tools `overrides` name instead). Its calls are judged by the policy in force now: the
        trust is the lower of the logged one and today's, so a config lowered since the crash holds (only `overrides`,
        the user's word now, widens). Raises NothingToResume (a SetupError) when it
        ended, SetupError for a session of another workspace, SessionNotFound for an unknown session."""
        if self.id is None:
            raise NothingToResume("no session to resume")
        overrides = overrides or Overrides()
        engine = self._engine
        if (home := engine.session_workspace(self.id)) not in (None, engine.workspace):
            raise SetupError(f"session {self.id} belongs to the workspace {home}: resume it there")
        async with self._one_line():
            rows = engine.store.events(self.id)
            point = resume_point(self.id, rows)
            point.lost = engine.processes.lost(self.id, logged_running(rows))
            await asyncio.to_thread(remove_orphans, engine.jail().root, [  # a write killed before its rename
                rel.rpartition("/")[0] for rel in engine.checkpoints.files(self.id, point.turn)])
            ran, state = point.settings, self.state
            state.session = self.id
            done = await engine.run_turn(
                point.request, sink, session=self.id, model=overrides.model or ran.get("model") or state.model,
                trust=overrides.trust or _narrower(ran.get("trust"), state.trust or engine.settings.trust),
                lens=overrides.lens or ran.get("lens"),
                tool_names=ran.get("tools") if overrides.tool_names is None else overrides.tool_names,
                instructions=[*ran.get("instructions", state.instructions()),
                              *([lost_note(point.lost)] if point.lost else [])], resume=point)
            return done

    def replay(self) -> list[SessionEvent]:
        """The stored session as the events its turns sent (agent/replay.py); raises SessionNotFound."""
        return replay(self._engine.store.events(self.id)) if self.id else []

    def messages(self) -> list[Message]:
        """The canonical messages of the stored session, as its next turn sends them."""
        return self._engine.store.messages(self.id) if self.id else []

    def model_spec(self) -> ModelSpec:
        """The model the next turn goes to: the one `::model` chose, else the configured one. Raises SetupError."""
        state = self._state or self._engine.live.find_chat(self._asked)  # reading it makes no state
        return self._engine.models.spec(state.model if state else None)

    def exists(self) -> bool:
        """Whether the session is stored (a new chat is not yet)."""
        return self.id is not None and self._engine.store.exists(self.id)

    def usage(self) -> SessionUsage:
        """The tokens and cost of the stored session, by turn; raises SessionNotFound."""
        try:
            model: str | None = str(self.model_spec())
        except SunwellError:
            model = None
        return session_usage(self._engine.store.events(self.id or ""), model, self._engine.settings.prices)

    def usage_line(self, done: DoneEvent) -> str | None:
        """The tokens and cost of the turn `done` ended, in a line, for a person watching; None for none."""
        return turn_line(self._engine.store.events(done.session), done.turn, str(self.model_spec()),
                         self._engine.settings.prices) or None

    def warm_up(self) -> None:
        """Import the model's SDK (about a second) before the first turn needs it. Raises what that turn would."""
        self._engine.models.provider(self.model_spec())

    @contextlib.asynccontextmanager
    async def _one_line(self, replacing: str | None = None) -> AsyncIterator[None]:
        """Two lines of one stored session wait for each other, but a line `replacing` a turn is refused while
        another runs (what it would replace may be running); after a line, the chat's state goes with the session
        the line left it in (a new chat's first turn made one, `::clear` ended one)."""
        was = self.id
        lock = self._engine.live.get(was).lock if was else None
        if replacing is not None and lock is not None and lock.locked():  # no await before the lock is taken
            raise SessionBusy(f"a turn is running in session {was}: stop it before replacing one of its turns")
        async with lock if lock is not None else contextlib.nullcontext():
            yield
            self._engine.live.moved(self.state, was)

    async def _turn(self, line: UserInput, sink: Sink) -> DoneEvent:
        state = self.state
        if line.replace_turn is not None:  # first: the turn's rows follow the rewind, on the branch it chose
            session = rewind(self._engine.store, state.session, line.replace_turn, title=line.text)
            self._engine.live.get(session).scratch.plan = None  # `::plan` reads the branch's own from the log
        done = await self._engine.run_turn(line.text, sink, session=state.session, model=state.model,
                                           trust=state.trust, tool_names=state.tool_names, lens=state.lens,
                                           instructions=state.instructions(), mentions=line.mentions,
                                           mentions_in_text=line.mentions_in_text, images=line.images)
        state.session = done.session or state.session
        return done

    async def _command(self, command: Command, sink: Sink) -> LineResult:
        result = await run_command(self._engine, self.state, command)
        if result.prompt is not None:
            return LineResult(await self._turn(UserInput(result.prompt), sink))
        return LineResult(self._answer(sink, command.name, result.output, result.events), exit=result.exit)

    def _answer(self, sink: Sink, command: str, output: str, events: tuple[Event, ...]) -> DoneEvent:
        """A command's answer as `commandOutput` and a `done` of its own, numbered like a turn's but not logged:
        commands are not part of the conversation."""
        ids = {"session": self.state.session or "", "turn": new_turn_id()}
        for seq, event in enumerate(events):
            sink(event.model_copy(update={"seq": seq, **ids}))
        sink(CommandOutputEvent(command=command, output=output, seq=len(events), **ids))
        done = DoneEvent(status="completed", tool_calls=0, usage=None, seq=len(events) + 1, **ids)
        sink(done)
        return done


def _narrower(logged: str | None, now: str) -> str:
    """The lower of two trust levels (an unknown logged name counts for nothing)."""
    return now if logged not in Trust.__members__ else min(Trust[logged], Trust[now]).name


def rewind(store: SessionStore, session: str | None, turn: str, *, title: str | None = None) -> str:
    """Take `session`'s conversation back to before `turn`, a turn of its current branch (agent/branch.py): a
    `rewind` row, appended like every other row, so a crash right after it leaves the session rewound and nothing
    else. InvalidReplace for a turn of another session, one already replaced, or an id no turn has. `title`: the
    line that replaces it, the session's title when `turn` was the branch's first (the history lists it so)."""
    try:
        rows = store.events(session) if session else []
    except SessionNotFound:
        rows = []
    if session is None or not any(row.turn == turn and row.kind == "message" for row in rows):
        where = f"session {clip(session)}" if session else "a new chat"
        raise InvalidReplace(f"no turn {clip(turn)!r} to replace in {where}: "
                             "a line can replace only a turn of its own session's conversation")
    store.append(session, "", 0, "rewind", f"rewound to before turn {turn}", {"turn": turn})
    if title is not None and next(row.turn for row in rows if row.kind == "message") == turn:
        store.retitle(session, title)
    return session


def open_store(engine: Engine) -> None:
    """Open the engine's session store now, if it is not yet: SessionStoreError says why its data dir cannot hold
    sessions (lens features work all the same)."""
    engine.store  # noqa: B018 - opened on first use


def stored_sessions(engine: Engine) -> list[SessionInfo]:
    """Every stored session, the newest first (`sunwell sessions list`, the editor's history)."""
    return engine.store.list()


def latest_session(engine: Engine) -> str | None:
    """The newest stored session of the engine's workspace, None when it has none."""
    return next((info.id for info in engine.store.list() if engine.session_workspace(info.id) == engine.workspace),
                None)

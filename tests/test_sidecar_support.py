"""Helpers for the sidecar tests (no tests here): `python -m sunwell.lsp` over real stdio, driven by pytest-lsp.

`sidecar` starts one with options (fixtures `env`, `workspace`, `fake` come from conftest.py); the `Sidecar`
records every `sunwell/chatEvent` and `sunwell/approve` it receives, and answers approvals with `answer`.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest_asyncio
from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import register_lsp_features

from sunwell.lsp.server import json_converter
from sunwell.wire import protocol

OPENAI = "openai:gpt-4o"
SERVER_COMMAND = [sys.executable, "-m", "sunwell.lsp"]


def make_client() -> LanguageClient:
    """pytest-lsp's test client, with custom-method params as plain dicts (pygls' default makes namedtuples)."""
    client = LanguageClient(converter_factory=json_converter)
    register_lsp_features(client)
    return client


class Sidecar:
    def __init__(self, client: LanguageClient, workspace: Path) -> None:
        self.client, self.workspace = client, workspace
        self.events: list[dict[str, Any]] = []
        self.event_times: list[float] = []
        self.approvals: list[dict[str, Any]] = []
        self.approval_cancelled: list[Any] = []
        self.answer: Callable[[dict[str, Any]], Any] = lambda params: {"decision": "deny"}
        """How the client answers `sunwell/approve`: a value, an awaitable, or an exception raised."""
        self.arrivals: list[tuple[Any, ...]] = []
        """Every response and chat event in the order it came off the wire: ("response", id) or
        ("event", turn, type)."""
        self.published_versions: dict[str, int | None] = {}
        """The document version of the last publishDiagnostics of each URI."""
        self._ids = itertools.count(1000)
        handle = client.protocol.handle_message

        def recording(message: Any) -> None:  # sees each message as it is read, before any handler runs
            method = getattr(message, "method", None)
            if method == types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS:
                self.published_versions[message.params.uri] = message.params.version
            elif method == protocol.CHAT_EVENT:
                self.arrivals.append(("event", message.params["turn"], message.params["type"]))
            elif method is None and hasattr(message, "id"):
                self.arrivals.append(("response", message.id))
            handle(message)

        client.protocol.handle_message = recording

        @client.feature(protocol.CHAT_EVENT)
        def on_event(params: dict[str, Any]) -> None:
            self.events.append(params)
            self.event_times.append(time.monotonic())

        @client.feature(protocol.APPROVE)
        async def on_approve(params: dict[str, Any]) -> Any:
            self.approvals.append(params)
            try:
                outcome = self.answer(params)
                return await outcome if asyncio.iscoroutine(outcome) else outcome
            except asyncio.CancelledError:
                self.approval_cancelled.append(params["callId"])
                raise

        self.questions: list[dict[str, Any]] = []
        self.questions_cancelled: list[Any] = []
        self.reply: Callable[[dict[str, Any]], Any] = lambda params: {"answer": None}
        """How the client answers `sunwell/ask` (sent only when it announced `clientCapabilities.ask`)."""
        self.intel: list[dict[str, Any]] = []
        self.lookup: Callable[[dict[str, Any]], Any] = lambda params: {"items": []}
        """How the client answers `sunwell/codeIntel`."""

        async def answered(record: list[dict[str, Any]], answer: Callable[[dict[str, Any]], Any],
                           params: dict[str, Any], cancelled: list[Any] | None = None) -> Any:
            record.append(params)
            try:
                outcome = answer(params)
                return await outcome if asyncio.iscoroutine(outcome) else outcome
            except asyncio.CancelledError:
                if cancelled is not None:
                    cancelled.append(params.get("callId"))
                raise

        @client.feature(protocol.ASK)
        async def on_ask(params: dict[str, Any]) -> Any:
            return await answered(self.questions, self.reply, params, self.questions_cancelled)

        @client.feature(protocol.CODE_INTEL)
        async def on_code_intel(params: dict[str, Any]) -> Any:
            return await answered(self.intel, self.lookup, params)

    async def request(self, method: str, params: Any = None, msg_id: Any = None) -> Any:
        return await self.client.protocol.send_request_async(method, params, msg_id=msg_id)

    def next_id(self) -> int:
        return next(self._ids)

    async def chat(self, text: str, **params: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """One turn: its answer and its events, checked to have all arrived before the answer."""
        msg_id = self.next_id()
        result = await self.request(protocol.CHAT, {"text": text, **params}, msg_id=msg_id)
        self.check_done_before_answer(result["turn"], msg_id)
        return result, self.turn_events(result["turn"])

    def check_done_before_answer(self, turn: str, msg_id: Any) -> None:
        done = self.arrivals.index(("event", turn, "done"))
        assert done < self.arrivals.index(("response", msg_id)), "the answer came before the done event"

    def turn_events(self, turn: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event["turn"] == turn]

    def cancel(self, msg_id: Any) -> None:
        self.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))

    def uri(self, relative: str) -> str:
        return from_fs_path(str(self.workspace / relative))

    async def wait_for(self, condition: Callable[[], Any], timeout: float = 10.0) -> Any:
        deadline = time.monotonic() + timeout
        while not (value := condition()):
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {condition}")
            await asyncio.sleep(0.02)
        return value


async def start_sidecar(env: dict[str, str], workspace: Path, options: dict[str, Any] | None = None,
                        capabilities: types.ClientCapabilities | None = None) -> Sidecar:
    config = ClientServerConfig(server_command=SERVER_COMMAND, server_env=env, client_factory=make_client)
    client = await config.start()
    sidecar = Sidecar(client, workspace)
    await client.initialize_session(types.InitializeParams(
        capabilities=capabilities or client_capabilities("visual-studio-code"),
        root_uri=from_fs_path(str(workspace)),
        workspace_folders=[types.WorkspaceFolder(uri=from_fs_path(str(workspace)), name="ws")],
        initialization_options=options,
    ))
    return sidecar


async def stop_sidecar(sidecar: Sidecar) -> None:
    await asyncio.wait_for(sidecar.client.shutdown_session(), 10)
    await sidecar.client.stop()


@pytest_asyncio.fixture
async def sidecar_factory(env, workspace, tmp_path):
    """start(options=None, env_extra=None) -> Sidecar; stopped (shutdown + exit) after the test."""
    started: list[Sidecar] = []

    async def start(options: dict[str, Any] | None = None, env_extra: dict[str, str] | None = None,
                    **kwargs: Any) -> Sidecar:
        defaults = {"dataDir": str(tmp_path / "data"), "model": OPENAI}
        sidecar = await start_sidecar({**env, **(env_extra or {})}, workspace,
                                      defaults if options is None else options, **kwargs)
        started.append(sidecar)
        return sidecar

    yield start
    for sidecar in started:
        await stop_sidecar(sidecar)


@pytest_asyncio.fixture
async def sidecar(sidecar_factory) -> Sidecar:
    return await sidecar_factory()


def check_turn(events: list[dict[str, Any]], result: dict[str, Any]) -> None:
    """docs/events.md "Rules of the stream" for one turn, plus: the answer matches the `done` that preceded it."""
    from conftest import check_stream_rules

    check_stream_rules(events)
    done = events[-1]
    assert (result["session"], result["turn"]) == (done["session"], done["turn"])
    assert result["status"] == done["status"] and result["toolCalls"] == done["toolCalls"]
    assert result["usage"] == done["usage"]

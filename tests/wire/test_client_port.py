"""The client port (wire/client.py): one door for every request to the user, answered the same way by a front end
with no one to ask, and as a turn's tools meet it (agent/questions.py: the approval mode and time limit)."""

from __future__ import annotations

import asyncio
import inspect
from typing import get_args

import pytest

from person import Person
from sunwell.agent.questions import TurnClient
from sunwell.config import Settings
from sunwell.wire.client import Client, Headless, NoOneToAsk, OpenUrl, Request
from sunwell.wire.user_requests import AskParams, CodeIntelParams, ElicitParams, SecretParams

REQUESTS = {"approve": "approve", "ask": "ask", "elicit": "elicit", "codeIntel": "code_intel", "openUrl": "open_url",
            "secrets": "secret"}


def test_every_kind_of_request_is_a_method_of_the_port():
    methods = {name for name, _ in inspect.getmembers(Client, inspect.iscoroutinefunction)}
    assert set(get_args(Request)) == set(REQUESTS)
    assert methods == set(REQUESTS.values())


ASKED = {
    "approve": None, "ask": AskParams(session="s", turn="t", call_id="c", question="?"),
    "elicit": ElicitParams(session="s", server="srv", message="name?", schema={"type": "object"}),
    "codeIntel": CodeIntelParams(kind="symbols", query="x"), "openUrl": OpenUrl(url="https://example.com", server="s"),
    "secrets": SecretParams(action="get", key="k"),
}


@pytest.mark.parametrize("request_kind", sorted(REQUESTS))
def test_a_headless_front_end_answers_nothing_and_says_so_one_way(request_kind):
    headless = Headless()
    assert headless.answers(request_kind) is False
    method = getattr(headless, REQUESTS[request_kind])
    with pytest.raises(NoOneToAsk) as raised:
        asyncio.run(method(ASKED[request_kind]))
    assert raised.value.request == request_kind


def test_with_approvals_set_to_deny_a_turns_tools_ask_no_one():
    person = Person(ask=lambda request: asyncio.sleep(0, "yes"))
    assert TurnClient(person, Settings(approval="ask")).answers("ask")
    assert not TurnClient(person, Settings(approval="deny")).answers("ask")


def test_a_question_not_answered_in_time_is_no_answer():
    async def never(request):
        await asyncio.sleep(60)

    client = TurnClient(Person(ask=never), Settings(approval="ask", approval_timeout_sec=0.1))
    assert asyncio.run(client.ask(ASKED["ask"])).answer is None


def test_a_sub_agents_client_refuses_what_it_is_told_to():
    client = TurnClient(Person(ask=lambda request: asyncio.sleep(0, "yes")), Settings(approval="auto"),
                        refused=frozenset({"ask"}))
    assert not client.answers("ask") and not client.answers("approve")

"""ask_user: a question for the person at the keyboard, when the model cannot go on without them.

The front end answers it (`ask` of the client port, wire/client.py): VS Code with a question card (`sunwell/ask`), the terminal at its prompt.
With no one to ask (headless, `--approve deny`) the call fails `unsupported` at once, so the model goes on on its
own. An answer comes back quoted, as the user's words, never as Sunwell's instructions.
"""

from __future__ import annotations

import json

from pydantic import Field

from sunwell.tools.arguments import ToolArguments
from sunwell.tools.base import Tool, ToolContext, ToolFailure, Trust
from sunwell.wire.user_requests import AskParams

MAX_OPTIONS = 10
MAX_ANSWER = 4_000
"""Characters of an answer the model reads; a longer one is cut."""
NO_ANSWER = ("The user did not answer (they declined, or no answer came in time). Do not ask again: go on with "
             "your best judgement and say what you assumed, or stop and explain what you need.")


class AskUserArguments(ToolArguments):
    question: str = Field(min_length=1, max_length=2_000, description="The question, complete and short.")
    options: list[str] | None = Field(None, max_length=MAX_OPTIONS,
                                      description="Likely answers to offer as choices (the user may type another).")


async def ask_user(arguments: AskUserArguments, ctx: ToolContext) -> str:
    if not ctx.client.answers("ask"):
        raise ToolFailure("unsupported", "there is no one to ask here (a headless run, or approvals set to deny)",
                          "decide yourself and say what you assumed, or stop and explain what you need to know")
    options = list(dict.fromkeys(option.strip() for option in arguments.options or () if option.strip()))
    answer = await ask_person(ctx, arguments.question.strip(), [option[:200] for option in options])
    if answer is None or not answer.strip():
        return NO_ANSWER
    answer = answer.strip()
    cut = len(answer) > MAX_ANSWER
    return f"The user answered: {json.dumps(answer[:MAX_ANSWER], ensure_ascii=False)}" + (" (cut)" if cut else "")


async def ask_person(ctx: ToolContext, question: str, options: list[str]) -> str | None:
    """The person's answer to a question of the call `ctx` runs (ask_user's, learn_api's tags), None for none."""
    call = ctx.call
    request = AskParams(session=call.session, turn=call.turn, call_id=call.id, question=question, options=options)
    return (await ctx.client.ask(request)).answer


ASK_USER = Tool.of(
    AskUserArguments, ask_user,
    name="ask_user",
    description=(
        "Ask the user a question and wait for the answer: only for a decision or a fact only they have, never for "
        "what the workspace tells you. Offer likely answers as `options`. Where no one can answer it fails at "
        'once: then decide yourself. Example: {"question": "Which database?", "options": ["PostgreSQL", "SQLite"]}.'
    ),
    min_trust=Trust.discovery,
    read_only=False,  # one question at a time, in the order they were asked
    expendable=True,  # the agent can do without (it can read, or decide, itself): a small window drops it first
    timeout=24 * 3600.0,  # the person's time limit is the front end's (the approval timeout), not this
)

"""docs/events.md: the event stream, from the models of sunwell.wire.events."""

from __future__ import annotations

from typing import get_args

from pydantic import BaseModel

from docgen.markdown import BANNER, Models, constant_docs, plain, slug
from sunwell.wire import events

INTRO = """\
# Events

What a turn says while it runs. `sunwell run --json` prints one event per line on stdout (and nothing else), and
the sidecar sends the same objects as the params of its `sunwell/chatEvent` notification ([sidecar.md](sidecar.md)).
Keys are camelCase. A reader should ignore keys and event types it does not know: new ones may be added.

## Rules of the stream

- One user line is one turn: every event of it carries the same `turn`, `seq` counts from 0 without a gap, and
  exactly one `done` ends it, last.
- Each call the model makes is shown as a `toolCall` as soon as it is complete, before it is checked: `arguments`
  is what the model wrote, parsed; when even the repaired text is not JSON, `arguments` is `{}` and `raw` holds
  the text. Exactly one `toolResult` with the same `callId` answers every `toolCall`.
- In a `toolResult`, `ok` is false exactly when `error` is set; `error.suggestion` may be null. `output` is cut to
  `max_output_bytes` ([config.md](config.md)) and then ends with a line that says so and how to ask for the rest.
- `done.toolCalls` counts every call the model made: invalid, unknown, denied and dry-run ones too.
- `approval.by` is `user` when a person answered, `policy` when the trust level, the `--approve` mode or an
  allow-for-session rule did.
- The events of a `task` sub-agent carry `parentCallId`, the `callId` of the `task` call that started it.
- With `--json`, stderr carries at most one line: the error a run ends with when it exits 1 ([cli.md](cli.md)).

## Provider faults and the tool-turn limit

A 429, a 5xx or a lost connection before the model's first streamed delta is retried with backoff (honouring
`retry-after`; 3 attempts unless `provider_attempts` says otherwise), each retry a `notice` with code
`provider_retry`. A fault after the first delta ends the turn with status `error`; a call whose arguments had not
arrived whole is never run. When `max_tool_turns` rounds have used tools, one last request asks the model to sum up
without tools, and the turn ends `limitReached` (exit code 3). Codes and statuses: [codes.md](codes.md).

## Durable turns

Every step of a turn is in the session's log before the next one starts: a finished answer of the model, a call
about to run, its result. A turn cut off by a crash, a kill or a dead sidecar reads back as `interrupted`, and
`sunwell run --resume [--session ID]` or `sunwell/resume` takes it up: a call that finished is never run again; a
call that was running is answered with the error `interrupted` (and a `call_interrupted` notice), unless it only
reads, and then it runs again, since a write, a command, an MCP, learned or network call may have done part of its
work. A turn that ended in a provider error resumes by sending again only the request that failed. The resumed turn
keeps its `turn` id, and `seq` goes on where the log ends.
"""


def _event_types() -> list[type[BaseModel]]:
    union = get_args(events.Event)[0]
    return list(get_args(union))


def anchors() -> dict[type, str]:
    """Where each model this page documents is, for the pages that link to it."""
    _, models = _build()
    return {model: f"events.md#{slug(models.titles[model])}" for model in models.written if model in models.titles}


def _title(model: type[BaseModel]) -> str:
    return str(model.model_fields["type"].default)


def page() -> str:
    return _build()[0]


def _build() -> tuple[str, Models]:
    models = Models()
    kinds = _event_types()
    common = kinds[0].__mro__[1]  # the base every event shares
    parts = [BANNER, INTRO, "\n## Every event\n\n",
             "Besides its own fields below, every event has these, and `type`, which names it:\n\n",
             models.fields(common)]
    models.written.add(common)
    parts.append("\n## The events\n\n")
    for kind in kinds:
        models.titles[kind] = _title(kind)
        parts.append(models.section(kind, skip=(*common.model_fields, "type")) + "\n")
    parts.append("## Objects in events\n\n")
    parts.append(models.rest())
    replay = events.UserMessageEvent
    models.titles[replay] = _title(replay)
    parts.append("\n## Only in a stored session\n\n" + plain(constant_docs(events)["SessionEvent"]) + "\n\n"
                 + models.section(replay, skip=(*common.model_fields, "type")))
    return "".join(parts).rstrip() + "\n", models

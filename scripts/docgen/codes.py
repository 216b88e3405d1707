"""docs/codes.md: the words a client branches on, from sunwell.vocabulary (error and notice codes, turn statuses,
decisions, risks, trust levels); what each means is said in scripts/docgen/meanings.py where the code does not."""

from __future__ import annotations

import inspect
import re
from typing import Any, get_args

from docgen.markdown import BANNER, constant_docs, plain, table
from docgen.meanings import ERRORS, NOTICES, VALUES, said
from sunwell import vocabulary

INTRO = """\
# Codes

The fixed words of events and results: a client or a test may branch on them. New codes may be added; a reader
should treat one it does not know as the kind of thing its field says (an error, a notice).
"""

_MEMBER = re.compile(r"^\s*(\w+) = \d+\s*#\s*(.+)$", re.MULTILINE)


def _values(alias: Any, meanings: dict[str, str], what: str) -> str:
    return table(["value", "meaning"], [[f"`{value}`", said(meanings, value, what)] for value in get_args(alias)])


def _trust() -> str:
    """The trust levels and what each adds, from the comments of the `Trust` enum."""
    added = dict(_MEMBER.findall(inspect.getsource(vocabulary.Trust)))
    return table(["level", "adds"], [[f"`{level.name}`", added.get(level.name, "")] for level in vocabulary.Trust])


PAGE = """\
## Error codes

{error_doc} A failed `toolResult` carries `error: {{code, message, suggestion}}` ([events.md](events.md)); the model
reads the same.

{errors}
## Notice codes

{notice_doc} A `notice` event also has a `level`: {levels}.

{notices}
## Turn statuses

`done.status`, and the `status` of a `sunwell/chat` result; `sunwell run` exits with the code of its status
([cli.md](cli.md)).

{statuses}
## Approvals

An `approval` event's `decision` and `by`; `sunwell/approve` is answered with a `decision`
([sidecar.md](sidecar.md)).

`decision`:

{decisions}
`by`:

{deciders}
## Risks

The `risk` of a `sunwell/approve` request: what kind of thing the call would do.

{risks}
## Trust levels

{trust_doc} Set with `trust` ([config.md](config.md)) or `--trust`; a lens or a workspace config may only lower it.

{trust}"""


def page() -> str:
    docs = constant_docs(vocabulary)
    return BANNER + INTRO + "\n" + PAGE.format(
        error_doc=plain(docs.get("ErrorCode")), errors=_values(vocabulary.ErrorCode, ERRORS, "the error code"),
        notice_doc=plain(docs.get("NoticeCode")), notices=_values(vocabulary.NoticeCode, NOTICES, "the notice code"),
        levels=", ".join(f"`{level}`" for level in get_args(vocabulary.NoticeLevel)),
        statuses=_values(vocabulary.TurnStatus, VALUES, "the status"),
        decisions=_values(vocabulary.Decision, VALUES, "the decision"),
        deciders=_values(vocabulary.DecidedBy, VALUES, "the decider"), risks=_values(vocabulary.Risk, VALUES, "the risk"),
        trust_doc=plain(vocabulary.Trust.__doc__), trust=_trust())

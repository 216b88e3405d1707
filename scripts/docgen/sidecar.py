"""docs/sidecar.md: the sidecar's JSON-RPC methods, from sunwell.wire.protocol (`REQUESTS`, the method constants and
their docstrings) and sunwell.wire.options (`initializationOptions`)."""

from __future__ import annotations

import re

from pydantic import BaseModel

from docgen import events as event_page
from docgen.markdown import BANNER, Models, constant_docs, plain, table
from docgen.meanings import METHODS, said
from sunwell.wire import options, protocol

INTRO = """\
# The sidecar

`sunwell serve` is the engine VS Code starts: it speaks JSON-RPC 2.0 with LSP framing over stdio (`--tcp --port N`
listens on TCP instead, for debugging; [cli.md](cli.md)). Besides the standard LSP features for `.lens` documents
(language id `{language}`: diagnostics, completion, hover, document symbols, code lens), it answers the methods
below and asks its client the ones after them. Keys are camelCase; a key the sidecar does not know in params is
ignored, so an older sidecar still answers a newer client. The sidecar writes only protocol to stdout; its logs go
to stderr and `window/logMessage`.

## Cancelling a turn

The standard `$/cancelRequest` on a `sunwell/chat` (or `sunwell/resume`) request cancels its turn: within about
2 s a running tool is stopped, a `done` event with status `cancelled` is sent, and the request is answered, with the
RequestCancelled error (-32800) or with a result of status `cancelled`. The `done` event always comes before the
answer to `sunwell/chat`. A turn that fails is answered with a normal result of status `error`; JSON-RPC errors are
for requests that cannot be served:

{errors}
"""

_SIDE = re.compile(r"^Server -> client(?: request| notification)?[:;] ")
"""How a method's docstring says which way it goes: the page's headings say it."""
APPROVALS = """\
With approval mode `auto` or `deny` no `sunwell/approve` is sent. No answer within `approvalTimeoutSec` (10 minutes
by default), an error answer or a decision the sidecar does not know counts as `deny`, decided `by: "policy"`. The
client says which of the other requests it answers in `initializationOptions.clientCapabilities`.
"""


def _direction(method: str, params: type | None, docs: dict[str, str]) -> str:
    """`in` (client -> server), `out` (server -> client request) or `notice` (server -> client notification):
    a params model the client sends is a `Params`; a method with no model says in its docstring."""
    if params is not None:
        return "in" if issubclass(params, options.Params) else "out"
    doc = docs.get(method, "").lower()
    return "notice" if "notification" in doc else "out" if doc.startswith("server -> client") else "in"


def _methods() -> list[tuple[str, str, type[BaseModel] | None, type[BaseModel] | None, str]]:
    """(constant, method, params, result, what it is) of every `sunwell/` method, in the order they are declared."""
    docs = constant_docs(protocol)
    found = []
    for name, value in vars(protocol).items():
        if name.isupper() and isinstance(value, str) and value.startswith("sunwell/"):
            params, result = protocol.REQUESTS.get(value, (None, None))
            doc = _SIDE.sub("", plain(docs.get(name)))
            found.append((name, value, params, result, said(METHODS, value, "the method", doc[:1].upper() + doc[1:])))
    return found


def page() -> str:
    models = Models(event_page.anchors(), defaults=lambda model: issubclass(model, options.Params))
    methods = _methods()
    docs = constant_docs(protocol)
    codes = [[f"`{getattr(protocol, name)}`", f"`{name}`", plain(docs.get(name))]
             for name in ("INVALID_PARAMS", "REQUEST_FAILED")]
    parts = [BANNER, INTRO.format(language=protocol.LANGUAGE_ID,
                                  errors=table(["code", "name", "when"], codes))]
    sections = {"in": "Client -> server requests", "out": "Server -> client requests",
                "notice": "Server -> client notifications"}
    for direction, heading in sections.items():
        rows, details = [], []
        for name, method, params, result, doc in methods:
            if _direction(name, params, docs) != direction:
                continue
            shown = models.link(params) if params else "as said below"
            answer = models.link(result) if result else ("none" if direction == "notice" else "as said below")
            rows.append([f"`{method}`", shown, answer])
            details.append(f"### `{method}`\n\n{doc}\n\nParams: {shown}. Result: {answer}.\n")
        parts.append(f"\n## {heading}\n\n" + table(["method", "params", "result"], rows) + "\n" + "\n".join(details))
        if direction == "out":
            parts.append("\n" + APPROVALS)
    parts.append("\n## `initializationOptions`\n\n" + plain(options.__doc__) + "\n\n")
    parts.append(models.section(options.InitializationOptions).split("\n", 2)[2])
    parts.append("\n## Types\n\n" + models.rest())
    return "".join(parts).rstrip() + "\n"

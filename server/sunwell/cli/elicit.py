"""An MCP server's question at the terminal (`elicit` of the client port, cli/client.py): shown with the server's name, its fields
asked one by one, none filled in for the person; an empty answer to the first question, `n` or the end of input
declines, `c` cancels. On stderr, like the approvals (stdout may carry --json events)."""

from __future__ import annotations

import json
from typing import Any, TextIO

from sunwell.cli.approvals import read_answer
from sunwell.cli.visible import visible
from sunwell.wire.user_requests import ElicitParams, ElicitResult


class FormPrompt:
    """One form, asked on `out` and answered on `stdin`; the caller holds the terminal (one question at a time)."""

    def __init__(self, stdin: TextIO, out: TextIO) -> None:
        self.stdin, self.out = stdin, out

    async def fill(self, request: ElicitParams) -> ElicitResult:
        self.out.write(f"\nThe MCP server {visible(request.server)} asks (its own words, not Sunwell's):\n"
                       f"  {visible(request.message)}\n")
        answer = await self._line("Answer it? [y]es / [n]o / [c]ancel: ")
        if answer in ("c", "cancel"):
            return ElicitResult(action="cancel")
        if answer not in ("y", "yes"):
            return ElicitResult(action="decline")
        content: dict[str, Any] = {}
        for name, prop, required in request.fields():
            value = await self._field(name, prop, required)
            if value is _CANCEL:
                return ElicitResult(action="cancel")
            if value is not None:
                content[name] = value
        return ElicitResult(action="accept", content=content)

    async def _field(self, name: str, prop: dict[str, Any], required: bool) -> Any:
        kind = prop.get("type", "string")
        choices = prop.get("enum")
        about = prop.get("description") or prop.get("title") or ""
        hint = f" ({' / '.join(map(str, choices))})" if choices else f" ({kind})" if kind != "string" else ""
        while True:
            line = await self._line(f"  {visible(name)}{hint}{' — ' + visible(about) if about else ''}"
                                    f"{'' if required else ' [optional]'}: ", lower=False)
            if line is None:
                return _CANCEL
            if not line and not required:
                return None
            try:
                return _typed(line, kind)
            except ValueError:
                self.out.write(f"  not a {kind}; try again\n")

    async def _line(self, prompt: str, lower: bool = True) -> Any:
        self.out.write(prompt)
        self.out.flush()
        line = await read_answer(self.stdin)
        if not line:
            return None if not lower else ""
        line = line.rstrip("\r\n").strip()
        return line.lower() if lower else line


_CANCEL = object()


def _typed(text: str, kind: str) -> Any:
    if kind == "integer":
        return int(text)
    if kind == "number":
        return float(text)
    if kind == "boolean":
        if text.lower() in ("y", "yes", "true"):
            return True
        if text.lower() in ("n", "no", "false"):
            return False
        raise ValueError(text)
    return text if kind == "string" else json.loads(text)

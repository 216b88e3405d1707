"""An MCP server's question at the terminal (tools/mcp/elicitation.py): shown with the server's name, its fields
asked one by one, none filled in for the person; an empty answer to the first question, `n` or the end of input
declines, `c` cancels. On stderr, like the approvals (stdout may carry --json events)."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any, TextIO

from sunwell.cli.approvals import read_answer
from sunwell.cli.visible import visible
from sunwell.tools.mcp.elicitation import form_fields


class TerminalElicitor:
    def __init__(self, stdin: TextIO = sys.stdin, out: TextIO = sys.stderr, lock: asyncio.Lock | None = None) -> None:
        self.stdin, self.out = stdin, out
        self._lock = lock or asyncio.Lock()  # one question at a time, the approvals' included

    async def __call__(self, session: str, server: str, message: str, schema: dict[str, Any]) -> dict[str, Any]:
        async with self._lock:
            self.out.write(f"\nThe MCP server {visible(server)} asks (its own words, not Sunwell's):\n"
                           f"  {visible(message)}\n")
            answer = await self._line("Answer it? [y]es / [n]o / [c]ancel: ")
            if answer in ("c", "cancel"):
                return {"action": "cancel"}
            if answer not in ("y", "yes"):
                return {"action": "decline"}
            content: dict[str, Any] = {}
            for name, prop, required in form_fields(schema):
                value = await self._field(name, prop, required)
                if value is _CANCEL:
                    return {"action": "cancel"}
                if value is not None:
                    content[name] = value
            return {"action": "accept", "content": content}

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

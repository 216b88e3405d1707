"""How a turn reads in a terminal: assistant text as it arrives, one line per tool call and per result.

Nearly all of it is model text (answers, tool names and arguments, error messages that quote them), so `Transcript`
passes every piece through `visible` before adding its own colors; `--json` is escaped by JSON itself.
"""

from __future__ import annotations

import json
import sys
from typing import TextIO

from sunwell.agent.events import Event
from sunwell.agent.turn import format_arguments
from sunwell.terminal_text import visible


class JsonLines:
    """`--json`: every event as one JSON line, flushed as it happens."""

    def __init__(self, out: TextIO = sys.stdout) -> None:
        self.out = out

    def __call__(self, event: Event) -> None:
        self.out.write(json.dumps(event.wire(), ensure_ascii=False) + "\n")
        self.out.flush()


class Transcript:
    def __init__(self, out: TextIO = sys.stdout, color: bool = False) -> None:
        self.out, self.color = out, color
        self.at_line_start = True

    def __call__(self, event: Event) -> None:
        match event.type:
            case "text":
                self._write(visible(event.delta))  # per character: a sequence split over deltas is caught too
            case "thinking":
                self._write(self._style(visible(event.delta), "2"))
            case "toolCall":
                self._line(self._style(visible(f"↪ {event.name}({format_arguments(event.arguments)})"), "36"))
            case "approval" if event.decision == "deny":
                self._line(self._style(f"  denied by {event.by}", "33"))
            case "toolResult":
                self._line(result_line(event, self._style))
            case "notice":
                self._line(self._style(visible(f"! {event.message}"), "33" if event.level != "info" else "2"))
            case "commandOutput":
                self._line(visible(event.output))
            case "done":
                if not self.at_line_start:
                    self._write("\n")
        self.out.flush()

    def _write(self, text: str) -> None:
        if text:
            self.out.write(text)
            self.at_line_start = text.endswith("\n")

    def _line(self, text: str) -> None:
        self._write(("" if self.at_line_start else "\n") + text + "\n")

    def _style(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text


def result_line(event, style=lambda text, code: text) -> str:
    if event.ok:
        lines = event.output.count("\n") + (1 if event.output and not event.output.endswith("\n") else 0)
        return style(f"  ✔ {lines} line{'s' if lines != 1 else ''} · {event.duration_ms} ms", "32")
    return style(visible(f"  ✘ {event.error.code}: {event.error.message}"), "31")

"""How Sunwell reads in a terminal: a turn's events as a transcript or JSON lines, and the markdown of command output
with the colors the editor grammars use. Everything shown from a model goes through `visible` (cli/visible.py)
before we add our own colors; `--json` is escaped by JSON itself.
"""

from __future__ import annotations

import json
import re
import sys
from typing import TYPE_CHECKING, TextIO

from sunwell.agent.turn import format_arguments
from sunwell.cli.visible import visible
from sunwell.commands_spec import parse_command

if TYPE_CHECKING:
    from sunwell.wire.events import Event

BOLD_CYAN, CYAN, BOLD, DIM, RED, RESET = "\x1b[1;36m", "\x1b[36m", "\x1b[1m", "\x1b[2m", "\x1b[31m", "\x1b[0m"


class VisiblePieces:
    """`visible` over text that arrives in pieces (a streamed answer). Whether a joiner or a presentation selector is
    text (👩‍💻, ⚠️, Persian's non-joiner) or hides it depends on the characters on both sides of it, which may come in
    other pieces: one at the end of a piece waits for the next, and the last character shown is the next one's
    context. A sequence split over pieces is escaped as it would be whole."""

    WAITING = "\u200c\u200d\ufe0e\ufe0f"

    def __init__(self) -> None:
        self.before, self.held = "", ""

    def __call__(self, piece: str) -> str:
        text = self.held + piece
        ready = text.rstrip(self.WAITING)
        self.held = text[len(ready):]
        return self._shown(ready)

    def flush(self) -> str:
        """What still waits, shown as it ends the text."""
        text, self.held = self.held, ""
        shown = self._shown(text)
        self.before = ""
        return shown

    def _shown(self, text: str) -> str:
        if not text:
            return ""
        # the context's own escape does not depend on what follows it: it is never one that waits
        shown = visible(self.before + text)[len(visible(self.before)):]
        self.before = text[-1]
        return shown


class JsonLines:
    """`--json`: every event as one JSON line, flushed as it happens."""

    def __init__(self, out: TextIO = sys.stdout) -> None:
        self.out = out

    def __call__(self, event: Event) -> None:
        self.out.write(json.dumps(event.wire(), ensure_ascii=False) + "\n")
        self.out.flush()


class Transcript:
    """A turn as it reads in a terminal: assistant text as it arrives, one line per tool call and per result (a denial
    is its result's line, which says who denied it: the `approval` event adds nothing to read)."""

    def __init__(self, out: TextIO = sys.stdout, color: bool = False) -> None:
        self.out, self.color = out, color
        self.at_line_start = True
        self._text, self._thinking = VisiblePieces(), VisiblePieces()
        self._plan: object = None
        """The plan last printed: the model resends the whole plan, and an unchanged one is not printed again."""

    def __call__(self, event: Event) -> None:
        if event.parent_call_id is not None:
            self._nested(event)
            self.out.flush()
            return
        if event.type != "text":
            self._write(self._text.flush())
        if event.type != "thinking" and (rest := self._thinking.flush()):
            self._write(self._style(rest, "2"))
        match event.type:
            case "text":
                self._write(self._text(event.delta))  # per character: a sequence split over deltas is caught too
            case "thinking":
                self._write(self._style(self._thinking(event.delta), "2"))
            case "toolCall":

                self._line(self._style(visible(f"↪ {event.name}({format_arguments(event.arguments)})"), "36"))
            case "toolResult":
                self._line(result_line(event, self._style))
            case "notice" if event.code == "compacted":  # one line per compaction, read as a divider
                self._line(self._style(visible(f"── conversation compacted: {event.message} ──"), "2"))
            case "notice":
                self._line(self._style(visible(f"! {event.message}"), "33" if event.level != "info" else "2"))
            case "plan" if (event.items, event.explanation) != self._plan:
                self._plan = (event.items, event.explanation)
                self._line(plan_lines(event, self._style))
            case "commandOutput":
                self._line(visible(event.output))
            case "process":
                self._line(self._style(visible(process_line(event)), "2"))
            case "done":
                if not self.at_line_start:
                    self._write("\n")
        self.out.flush()

    def _nested(self, event: Event) -> None:
        """A `task` sub-agent's calls, indented under its call; its words stay its own (its answer is the result)."""
        match event.type:
            case "toolCall":

                self._line(self._style(visible(f"    ↪ {event.name}({format_arguments(event.arguments)})"), "36"))
            case "toolResult":
                self._line("  " + result_line(event, self._style))
            case "notice":
                self._line(self._style(visible(f"      ! {event.message}"), "33"))

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


def process_line(event) -> str:
    """`⚙ process 1 running (port 8000): npm run dev` — a background process's change of state."""
    ports = f" (port{'s' if len(event.ports) > 1 else ''} {', '.join(map(str, event.ports))})" if event.ports else ""
    code = f" with code {event.exit_code}" if event.exit_code is not None else ""
    return f"⚙ process {event.process_id} {event.state}{code}{ports}: {event.command}"


_PLAN_MARKS = {"done": ("✔", "32"), "in_progress": ("▶", "1;36"), "pending": ("○", "0")}


def plan_lines(event, style=lambda text, code: text) -> str:
    """The plan as a checklist: `Plan 2/5`, then a line per step, the one in progress highlighted."""
    done = sum(item.status == "done" for item in event.items)
    lines = [style(f"Plan {done}/{len(event.items)}", "1")]
    for item in event.items:
        mark, code = _PLAN_MARKS[item.status]
        lines.append(style(visible(f"  {mark} {item.step}"), code))
    if event.explanation:
        lines.append(style(visible(f"  {event.explanation}"), "2"))
    return "\n".join(lines)


_INLINE = re.compile(r"`([^`]+)`|\*\*([^*]+)\*\*|(?<![\w:])(::[a-zA-Z][\w-]*)")


def render_markdown(text: str, color: bool) -> str:
    """Command output for a terminal: `::commands` bold cyan, code cyan, strong bold; the markdown as is without
    color (it reads well enough)."""
    if not color:
        return text

    def paint(match: re.Match[str]) -> str:
        code, strong, command = match.groups()
        if code is not None:
            return highlight_command(code) if parse_command(code) else f"{CYAN}{code}{RESET}"
        return f"{BOLD}{strong}{RESET}" if strong is not None else f"{BOLD_CYAN}{command}{RESET}"

    lines, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        else:
            lines.append(f"{DIM}{line}{RESET}" if fenced else _INLINE.sub(paint, line))
    return "\n".join(lines)


def highlight_command(line: str) -> str:
    """`::name args` with the name in bold cyan, as the editor grammars mark it."""
    if (command := parse_command(line)) is None:
        return line
    start = line.index("::")
    end = start + 2 + len(command.name)
    return f"{line[:start]}{BOLD_CYAN}{line[start:end]}{RESET}{line[end:]}"

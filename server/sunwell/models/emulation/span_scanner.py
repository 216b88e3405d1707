"""Where the calls in a model's text may be: `SpanScanner` splits text, as it streams, into prose and call
candidates (fenced blocks, bare JSON, Python-style calls on lines of their own, the XML emulation format, and each
open-model family's markers, `dialects.py`); `normalize.parse_span` reads a candidate."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Literal

from sunwell.models.emulation import dialects, dsml, gemma, glimmer, hunyuan, kimi_k3, qwen3_xml
from sunwell.vocabulary import canonical_tool_name

JSON_FENCES = {"", "json", "jsonc", "json5", "xml"}
CALL_FENCES = {"tool_call", "tool_calls", "tool", "tool_use", "function", "function_call", "functions"}
_LOOKAHEAD = 256
"""Bare `{`/`[` text (and a `code span`) is held at most this long unless it starts like a call, so prose flows on."""
_HEADER_MAX = 300
"""A harmony header longer than this without `<|message|>` is no header."""
CALLISH = re.compile(r"""["']?\b(?:name|tool|tool_name|function|tool_calls)\b["']?\s*:""")
"""A key that names a call (`"name":`, `tool:`): JSON with one may be a call."""
ACTION = "Action:"
"""Command R's label before its call fence (`Action: ```json [...]````): part of the call, not the answer."""
_TRIGGER = re.compile(rf"[`{{\[<\]]|(?<!\w)(?:{dialects.FUNCTOOLS}|{ACTION})|->|-\Z")  # `]`: MiniMax-M3's `]<]minimax[>[`; `->`: HyperCLOVA X's role header
FENCE_OPEN = re.compile(r"```([\w.+-]*)")
PY_LINE = re.compile(r"[ \t]*(\[[ \t]*)?([A-Za-z_][\w.]*)")
_PY_LINE_START = re.compile(r"[ \t]*(?:\[[ \t]*)?")
_PY_LIST = re.compile(r"\[[ \t]*([A-Za-z_][\w.]*)[ \t]*\(")
_PY_LIST_OPENING = re.compile(r"\[[ \t]*([A-Za-z_][\w.]*)?[ \t]*")

_OPENERS = re.compile("|".join(re.escape(m) for m in (*dialects.CLOSED, *dialects.JSON_AFTER, *dialects.HARMONY)))
"""Where a call's own markers begin: JSON in prose that runs into one was no call's JSON."""

Kind = Literal["text", "candidate", "partial", "wait"]
Step = tuple[Kind, int]


class _Balance:
    """Incremental bracket matching from one `{`, `[` or `(`, aware of strings (double-quoted in JSON; single-
    or double-quoted in Python)."""

    def __init__(self, start: int, python: bool = False) -> None:
        self.start, self.i, self.depth, self.quote = start, start, 0, ""
        self.found: int | None = None
        self.significant = re.compile(r"""[{}\[\]()"'\\]""" if python else r'[{}\[\]"\\]')

    def end(self, buf: str) -> int | None:
        if self.found is not None:
            return self.found
        i = self.i
        while (m := self.significant.search(buf, i)) is not None:
            c, i = m.group(), m.end()
            if self.quote:
                if c == "\\":
                    if i >= len(buf):
                        i = m.start()  # the escaped character has not arrived yet
                        break
                    i += 1
                elif c == self.quote:
                    self.quote = ""
            elif c in "\"'":
                self.quote = c
            elif c in "{[(":
                self.depth += 1
            elif c in "}])":
                self.depth -= 1
                if self.depth == 0:
                    self.i = self.found = i
                    return i
        else:
            i = len(buf)
        self.i = i
        return None


class SpanScanner:
    """Splits text into prose and call candidates, one step at a time.

    `step(buf, pos, final)` decides what `buf[pos:end]` is: `text` (safe to show), `candidate` (might be a
    call: give it to `parse_span`), `partial` (a candidate the text ends inside: only returned when `final`) or
    `wait` (undecidable until more text arrives; never returned when `final`). A step only decides what no
    further text can change, and `buf` may only grow between `wait`s, so any chunking of a stream gives the same
    spans. Inside a fenced code block that cannot hold a call (```python) text flows on. What the scanner needs
    of the text already consumed (inside a code block? at the start of a line?) it keeps itself, so a caller
    may drop consumed text from `buf`.
    """

    def __init__(self, tool_names: Collection[str]) -> None:
        self.tool_names = frozenset(tool_names)
        self._tools = tool_names if isinstance(tool_names, Mapping) else {}  # their schemas, where given
        self._markers = (
            *dialects.CLOSED,
            *dialects.JSON_AFTER,
            *dialects.HARMONY,
            *dialects.CONTROL,
            *(f"<{n}>" for n in sorted(self.tool_names)),
        )
        self._longest = max(len(m) for m in self._markers)
        self._keys = {_name_key(n) for n in self.tool_names}
        self._in_code = False
        self._line_blank = True
        """Only whitespace since the last line break (or the start): a fence or a Python call may begin here."""
        self._balance: _Balance | None = None
        self._word_before = False
        """The text consumed so far ends in a word character (`myfunctools[` holds no marker, however chunked)."""
        self._fresh = True
        """Nothing consumed yet: a Glimmer header (` to=user<|message|>`) may open the reply."""
        self._message_open = True
        """Only whitespace since the reply's start or a message's header: an ATEM block here may be a call."""

    def step(self, buf: str, pos: int, final: bool) -> Step:
        kind, end = self._step(buf, pos, final)
        if kind != "wait":
            self._balance, self._fresh = None, False
            span = buf[pos:end]
            line = span.rfind("\n")
            self._line_blank = (line >= 0 or self._line_blank) and not span[line + 1 :].strip()
            self._line_blank |= span.endswith(gemma.THOUGHT["<|channel>"])  # Gemma 4's call may follow its thought
            self._word_before = bool(re.match(r"\w", span[-1:])) if span else self._word_before
            if span.strip():
                self._message_open = kind == "candidate" and glimmer.opens_message(span)
        return kind, end

    def _step(self, buf: str, pos: int, final: bool) -> Step:
        if self._in_code:
            return self._code_block(buf, pos, final)
        if self._fresh and (header := glimmer.header_at_start(buf, pos, final)):
            return header
        if self._line_blank and (bare := gemma.bare_call(buf, pos, final, self._is_tool)):
            return bare
        if self._line_blank and (python := self._python_line(buf, pos, final)):
            return python
        m = _TRIGGER.search(buf, pos)
        if m is not None and m.start() == pos and pos == 0 and self._word_before and buf[0] not in "`{[<]":
            m = _TRIGGER.search(buf, pos + 1)  # the word runs on from text already consumed
        line = buf.find("\n", pos)
        stop = min(m.start() if m else len(buf), line + 1 if line >= 0 else len(buf))
        if m is None and line < 0 and not final:
            stop = min(stop, self._word_marker_tail(buf, pos))
        if stop > pos:
            return "text", stop
        if buf.startswith(dialects.FUNCTOOLS, pos):
            return self._functools(buf, pos, final)
        if buf.startswith(ACTION, pos):
            return self._action(buf, pos, final)
        if m is None and not final:
            return "wait", pos  # the text's end may begin `functools[`
        if buf[pos] == "`":
            return self._backticks(buf, pos, final)
        if buf[pos] == "{":
            return self._json(buf, pos, pos, final, lookahead=True)
        rest = buf[pos : pos + self._longest]
        for marker in self._markers:
            if rest.startswith(marker):
                if not final and marker in dialects.CONTROL and self._may_grow(rest):
                    return "wait", pos  # `<|action_start|>` may become `<|action_start|><|plugin|>`
                return self._marked(marker, buf, pos, final)
        if not final and any(marker.startswith(rest) for marker in self._markers):
            return "wait", pos
        if buf[pos] == "[":
            j = _skip_space(buf, pos + 1)
            if j < len(buf) and buf[j] == "{":
                return self._json(buf, pos, pos, final, lookahead=True)
            if j == len(buf) and not final:
                return "wait", pos
            if listed := self._python_list(buf, pos, final):
                return listed
        return "text", pos + 1

    def _may_grow(self, rest: str) -> bool:
        return any(len(m) > len(rest) and m.startswith(rest) for m in self._markers)

    def _word_marker_tail(self, buf: str, pos: int) -> int:
        """Where the text's end may be the start of `functools[` (held until the next chunk says)."""
        for word in (dialects.FUNCTOOLS, ACTION):
            for n in range(min(len(word), len(buf) - pos), 0, -1):
                at = len(buf) - n
                before = buf[at - 1] if at > 0 else ("a" if self._word_before else " ")
                if buf.endswith(word[:n]) and not re.match(r"\w", before):
                    return at
        return len(buf)

    def _action(self, buf: str, pos: int, final: bool) -> Step:
        """`Action:` and the ```json fence after it are one candidate; without a fence the label is a word."""
        j = _skip_space(buf, pos + len(ACTION), " \n")  # on its own line in Command R+'s template
        if not final and "```json".startswith(buf[j : j + 7]) and len(buf) - j < 7:
            return "wait", pos
        if not buf.startswith("```json", j):
            return "text", pos + len(ACTION)
        kind, end = self._fence(buf, j, final)
        return ("wait", pos) if kind == "wait" else (kind, end)

    def _functools(self, buf: str, pos: int, final: bool) -> Step:
        """Phi-4-mini's `functools[{...}]`: through the list; the word is prose when no `[{` follows it."""
        j = pos + len(dialects.FUNCTOOLS)
        k = _skip_space(buf, j + 1)
        if not final and (j == len(buf) or (buf[j] == "[" and k == len(buf))):
            return "wait", pos
        if buf[j : j + 1] != "[" or buf[k : k + 1] != "{":
            return "text", j
        return self._json(buf, pos, j, final)

    def _python_list(self, buf: str, pos: int, final: bool) -> Step | None:
        """A bracketed list of Python calls of an offered tool, `[get_weather(city='Paris')]`, wherever it stands:
        the brackets make it a call where a bare `f(x)` in a sentence is a mention (sglang's pythonic tests)."""
        m = _PY_LIST.match(buf, pos)
        if m is None:
            opening = _PY_LIST_OPENING.fullmatch(buf, pos)
            waiting = not final and opening is not None and self._may_become_tool(opening[1] or "")
            return ("wait", pos) if waiting else None
        if not self._is_tool(m[1]):
            return None
        end = self._balanced_end(buf, pos, python=True)
        if end is None:
            return ("partial", len(buf)) if final else ("wait", pos)
        return "candidate", end

    def _balanced_end(self, buf: str, start: int, python: bool = False) -> int | None:
        if self._balance is None or self._balance.start != start:
            self._balance = _Balance(start, python)
        return self._balance.end(buf)

    def _json(self, buf: str, pos: int, start: int, final: bool, lookahead: bool = False) -> Step:
        """A candidate from `pos` through the JSON value that begins at `start`."""
        if lookahead:
            j = _skip_space(buf, start + 1)
            if j == len(buf):
                return ("text", pos + 1) if final else ("wait", pos)
            if not (buf[j] in "\"'{}" or buf[j].isalpha() or buf[j] == "_"):
                return "text", pos + 1  # `{0}`, `{ x }` in code, `[1]`, `[link](…)`
        end = self._balanced_end(buf, start)
        if lookahead and _OPENERS.search(buf, pos + 1, end if end is not None else len(buf)):
            return "text", pos + 1  # `hi{hi[TOOL_CALLS]f{…}`: a brace in prose, then a call of its own
        if end is not None and (not lookahead or end - pos <= _LOOKAHEAD):
            return "candidate", end
        if lookahead and len(buf) - pos >= _LOOKAHEAD and not self._callish(buf[pos : pos + _LOOKAHEAD]):
            return "text", pos + 1
        if end is not None:
            return "candidate", end
        return ("partial", len(buf)) if final else ("wait", pos)

    def _callish(self, text: str) -> bool:
        return bool(CALLISH.search(text)) or any(name in text for name in self.tool_names)

    def _python_line(self, buf: str, pos: int, final: bool) -> Step | None:
        """A line that is a Python call of an offered tool (`[read_file(path="a")]`), with nothing after it."""
        m = PY_LINE.match(buf, pos)
        if m is None:
            waiting = not final and _PY_LINE_START.fullmatch(buf, pos) is not None and len(buf) > pos
            return ("wait", pos) if waiting else None
        j = _skip_space(buf, m.end(), "\t ")
        if j == len(buf):
            return ("wait", pos) if not final and self._may_become_tool(m[2]) else None
        if buf[j] != "(" or not self._is_tool(m[2]):
            return None
        end = self._balanced_end(buf, m.start(1) if m[1] else j, python=True)
        if end is None:
            return ("partial", len(buf)) if final else ("wait", pos)
        line = buf.find("\n", end)
        if buf[end : line if line >= 0 else len(buf)].strip():
            return None  # prose after the call: a mention, not a call
        return ("wait", pos) if line < 0 and not final else ("candidate", end)

    def _is_tool(self, name: str) -> bool:
        return name in self.tool_names or canonical_tool_name(name, sorted(self.tool_names)) is not None

    def _may_become_tool(self, prefix: str) -> bool:
        key = _name_key(prefix)
        return "functions.".startswith(prefix.lower()) or any(k.startswith(key) for k in self._keys)

    def _backticks(self, buf: str, pos: int, final: bool) -> Step:
        run = len(buf[pos:]) - len(buf[pos:].lstrip("`"))
        if pos + run == len(buf) and not final:
            return "wait", pos  # the run may grow into a fence
        if run >= 3:
            lang_end = FENCE_OPEN.match(buf, pos).end()
            if lang_end == len(buf) and not final:
                return "wait", pos
            if self._line_blank or buf[lang_end : lang_end + 1] == "\n":
                return self._fence(buf, pos, final)
        # A code span on one line (`{"name": …}`, or ```json {…}``` within a sentence) is an example explained.
        close = re.compile(rf"(?<!`)`{{{run}}}(?!`)").search(buf, pos + run)
        line = buf.find("\n", pos)
        if close and (line < 0 or close.start() < line):
            return "text", close.end()
        if line >= 0 or final or len(buf) - pos > _LOOKAHEAD:
            return "text", pos + run
        return "wait", pos

    def _fence(self, buf: str, pos: int, final: bool) -> Step:
        lang_end = FENCE_OPEN.match(buf, pos).end()
        if lang_end == len(buf) and not final:
            return "wait", pos
        lang = buf[pos + 3 : lang_end].lower()
        if lang not in JSON_FENCES | CALL_FENCES:
            self._in_code = True
            return "text", lang_end
        # The closing fence is looked for after the JSON value: a ``` in a string (README content) is safe.
        j = _skip_space(buf, lang_end)
        body_end = self._balanced_end(buf, j) if j < len(buf) and buf[j] in "{[" else lang_end
        close = buf.find("```", body_end if body_end is not None else lang_end)
        if body_end is not None and close >= 0:
            return "candidate", close + 3
        if final:
            close = buf.find("```", lang_end)
            if close >= 0:
                return "candidate", close + 3
            return ("candidate" if body_end not in (None, lang_end) else "partial"), len(buf)
        return "wait", pos

    def _code_block(self, buf: str, pos: int, final: bool) -> Step:
        close = buf.find("```", pos)
        if close >= 0:
            self._in_code = False
            return "text", close + 3
        safe = len(buf) if final else len(buf.rstrip("`"))  # a trailing ` or `` may open the closing fence
        return ("text", safe) if safe > pos else ("wait", pos)

    def _marked(self, marker: str, buf: str, pos: int, final: bool) -> Step:
        body = pos + len(marker)
        if marker in ("<|open|>", "<|close|>"):  # Kimi K3's: a marker's word follows
            end = kimi_k3.marker_end(buf, body, final)
            return ("wait", pos) if end is None else ("candidate", end)
        if marker in dialects.CONTROL:
            return "candidate", body
        if marker == glimmer.OPEN:
            return glimmer.block(buf, pos, final, self._message_open)
        if marker == hunyuan.SUFFIXED:
            return hunyuan.block(buf, pos, final)
        if marker in dialects.HARMONY:
            return self._harmony(marker, buf, pos, final)
        if marker in dialects.JSON_AFTER:
            j = _skip_space(buf, body)
            if j == len(buf):
                return ("partial", len(buf)) if final else ("wait", pos)
            if buf[j] in "{[":
                return self._json(buf, pos, j, final)
            if marker == "[TOOL_CALLS]":
                return self._mistral_named(buf, pos, j, final)
            return "candidate", body  # a marker with no JSON after it: dropped
        if marker == dsml.INVOKE and (header := dsml.invoke_header(buf, body, final)) != "call":
            return ("wait", pos) if header == "wait" else ("text", body)  # a marker quoted in prose
        if (structural := qwen3_xml.marked(marker, buf, pos, final, self._tools)) is not None:
            return structural  # Qwen3-Coder's: a value may hold the format's own tags as text
        closer = dialects.CLOSED.get(marker) or "</" + marker[1:]
        k = buf.find(closer, body)
        if k >= 0:
            return "candidate", k + len(closer)
        return ("partial", len(buf)) if final else ("wait", pos)

    def _mistral_named(self, buf: str, pos: int, j: int, final: bool) -> Step:
        """`[TOOL_CALLS]name[CALL_ID]id[ARGS]{...}`: through the JSON after the name."""
        m = dialects.MISTRAL_NAME.match(buf, j)
        k = m.end() if m else j
        if not final and (k == len(buf) or any(t.startswith(buf[k:]) for t in ("[ARGS]", "[CALL_ID]"))):
            return "wait", pos
        if m and k < len(buf) and buf[k] == "{":
            return self._json(buf, pos, k, final)
        # a word after the marker that no JSON follows is no name: only the marker goes (vLLM's test)
        return ("partial", len(buf)) if k == len(buf) else ("candidate", j)

    def _harmony(self, marker: str, buf: str, pos: int, final: bool) -> Step:
        """A gpt-oss message: a call through its JSON (or `<|call|>`), thinking through `<|end|>`, or else only
        the header (the text after it streams on as the answer)."""
        header = dialects.harmony_header(buf[pos : pos + _HEADER_MAX])
        if header is None:
            undecided = not final and len(buf) - pos < _HEADER_MAX
            return ("wait", pos) if undecided else ("candidate", pos + len(marker))
        channel, recipient, at = header
        body = pos + at
        if channel is None and not (recipient or "functions.").startswith("functions."):
            return glimmer.message(buf, pos, body, recipient, final)  # Glimmer's header has no channel
        if recipient:
            k = buf.find(dialects.HARMONY_CALL_END, body)
            if k >= 0:
                return "candidate", k + len(dialects.HARMONY_CALL_END)
            j = _skip_space(buf, body)
            if j < len(buf) and buf[j] in "{[":
                return self._json(buf, pos, j, final)
            return ("partial", len(buf)) if final else ("wait", pos)
        if channel == "analysis":
            ends = [k for k in (buf.find("<|start|>", body), buf.find("<|channel|>", body)) if k >= 0]
            if (k := buf.find("<|end|>", body)) >= 0:
                ends.append(k + len("<|end|>"))
            if ends:
                return "candidate", min(ends)
            return ("candidate", len(buf)) if final else ("wait", pos)
        return "candidate", body


def _skip_space(buf: str, i: int, space: str | None = None) -> int:
    while i < len(buf) and (buf[i] in space if space else buf[i].isspace()):
        i += 1
    return i


def _name_key(name: str) -> str:
    return re.sub(r"[\s.\-_]+", "_", name.lower().removeprefix("functions.")).strip("_")

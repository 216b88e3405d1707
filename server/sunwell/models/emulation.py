"""Tool calling for models that cannot do it natively, and for those that only sometimes do.

`EmulatedProvider` describes the tools in the system prompt (`tool_prompt`), sends no `tools`, renders the
history as plain turns (`render_history_for_emulation`) and finds the calls in the streamed text
(`CallDetector`). `RecoveringProvider` is for native-but-unreliable models (local servers): it keeps native
tool events as they are and recovers a call the model wrote as text instead (PROTOCOL.md "Model strings").
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Collection, Iterable
from dataclasses import replace
from typing import Any, Literal

from sunwell.messages import AssistantMessage, Message, ToolResultMessage, ToolSpec, UserMessage
from sunwell.models.base import (
    Finished,
    ModelRequest,
    Notice,
    Provider,
    ProviderError,
    StreamEvent,
    TextDelta,
    ToolCallArgs,
    ToolCallDone,
    ToolCallStarted,
)
from sunwell.models.normalize import Extraction, SpanScanner, parse_span
from sunwell.models.pythonic import PYTHONIC_OPEN, PYTHONIC_PREFIX, pythonic_calls

Style = Literal["json", "xml", "hermes"]
"""`json`: a ```json block; `xml`: an element per call; `hermes`: Qwen's and Hermes' trained format (function
signatures as JSON inside `<tools>`, calls as JSON inside `<tool_call>`), which small Qwen models follow far
better than any format described to them (BENCHMARKS.md, "Tool-calling accuracy")."""
EMULATED_ID_PREFIX = "emu_"


# --- the prompt ---------------------------------------------------------------------------------------------

def tool_prompt(tools: list[ToolSpec], style: Style = "json", *, compact: bool = False,
                parallel: bool = False) -> str:
    """The system-prompt section that offers `tools` and says how to call them in `style`."""
    if style == "hermes":
        return _hermes_prompt(tools, compact=compact, parallel=parallel)
    lines = ["# Tools", "", "You can call these tools:", ""]
    lines += [_compact_tool(t) for t in tools] if compact else ["\n\n".join(_full_tool(t) for t in tools)]
    example = tools[0] if tools else ToolSpec(name="tool_name", description="", parameters={})
    args = {p: _example_value(s) for p, s in _params(example) if p in _required(example)}
    if style == "json":
        how = "reply with a JSON object in a ```json block, with the tool's name and its arguments"
    else:
        how = "write an XML element named after the tool, with one child element per argument"
    lines += ["", f"To call a tool, {how}. For example:", "", render_call(example.name, args, style), ""]
    lines.append("To call several tools at once, write one call after the other." if parallel else
                 "Call one tool per reply, then stop: its result comes in the next message.")
    lines.append("Use only the tools listed above, with their exact names. When you have what you need, "
                 "answer in plain text, without a tool call.")
    return "\n".join(lines)


def _hermes_prompt(tools: list[ToolSpec], *, compact: bool, parallel: bool) -> str:
    # Worded as Qwen2.5's own chat template words it: the model was trained on exactly this text, and every
    # departure tried (a prose list of tools, a worked example, extra advice) made a 0.5B model call worse.
    signatures = "\n".join(json.dumps({"type": "function", "function": {
        "name": t.name,
        "description": _first_sentence(t.description) if compact else t.description.strip(),
        "parameters": t.parameters}}, ensure_ascii=False) for t in tools)
    lines = [
        "# Tools", "",
        "You may call one or more functions to assist with the user query.", "",
        "You are provided with function signatures within <tools></tools> XML tags:",
        "<tools>", signatures, "</tools>", "",
        ("For each function call, return a json object with function name and arguments within "
         "<tool_call></tool_call> XML tags:"),
        "<tool_call>", '{"name": <function-name>, "arguments": <args-json-object>}', "</tool_call>",
    ]
    if not parallel:
        lines += ["", "Call one function per reply, then stop: its result comes in the next message."]
    return "\n".join(lines)


def _first_sentence(text: str) -> str:
    return re.split(r"(?<=\.)\s", text.strip(), maxsplit=1)[0]


def _params(tool: ToolSpec) -> list[tuple[str, dict[str, Any]]]:
    return list((tool.parameters.get("properties") or {}).items())


def _required(tool: ToolSpec) -> set[str]:
    return set(tool.parameters.get("required") or [])


def _type(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    kind = schema.get("type", "any")
    return "/".join(kind) if isinstance(kind, list) else kind


def _compact_tool(tool: ToolSpec) -> str:
    required = _required(tool)
    params = ", ".join(f"{p}{'' if p in required else '?'}: {_type(s)}" for p, s in _params(tool))
    return f"- {tool.name}({params}): {_first_sentence(tool.description)}"


def _full_tool(tool: ToolSpec) -> str:
    lines = [f"## {tool.name}", tool.description.strip()]
    for param, schema in _params(tool):
        need = "required" if param in _required(tool) else "optional"
        default = f", default {json.dumps(schema['default'])}" if "default" in schema else ""
        text = schema.get("description", "")
        lines.append(f"- {param} ({_type(schema)}, {need}{default}){': ' + text if text else ''}")
    return "\n".join(lines)


def _example_value(schema: dict[str, Any]) -> Any:
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    return {"integer": 1, "number": 1, "boolean": True, "array": [], "object": {}}.get(kind, "...")


def render_call(name: str, arguments: dict[str, Any], style: Style = "json") -> str:
    """A call as the model is asked to write it (the prompt's example and past calls in the history)."""
    if style == "json":
        return "```json\n" + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False) + "\n```"
    if style == "hermes":
        return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False) + \
            "\n</tool_call>"
    params = [f"<{k}>{v if isinstance(v, str) else json.dumps(v)}</{k}>" for k, v in arguments.items()]
    return "\n".join([f"<{name}>", *params, f"</{name}>"])


# --- the history --------------------------------------------------------------------------------------------

def render_history_for_emulation(messages: Iterable[Message], style: Style = "json") -> list[Message]:
    """Tool calls become assistant text and tool results user turns, for servers that know no tool roles."""
    out: list[Message] = []
    calls: dict[str, dict[str, Any]] = {}
    for msg in messages:
        if isinstance(msg, AssistantMessage) and msg.tool_calls:
            calls.update({c.id: c.arguments for c in msg.tool_calls})
            text = "\n".join([msg.text, *(render_call(c.name, c.arguments, style) for c in msg.tool_calls)])
            out.append(msg.model_copy(update={"text": text.strip(), "tool_calls": []}))
        elif isinstance(msg, ToolResultMessage) and style == "hermes":
            _append_user(out, f"<tool_response>\n{msg.content_for_model()}\n</tool_response>")
        elif isinstance(msg, ToolResultMessage):
            signature = _signature(msg.name, calls.get(msg.call_id, {}))
            _append_user(out, f"Result of {signature}:\n{msg.content_for_model()}")
        elif isinstance(msg, UserMessage):
            _append_user(out, msg.text)
        else:
            out.append(msg)
    return out


def _signature(name: str, arguments: dict[str, Any]) -> str:
    def short(value: Any) -> str:
        text = json.dumps(value, ensure_ascii=False)
        return text if len(text) <= 60 else text[:57] + "…"
    return f"{name}({', '.join(f'{k}={short(v)}' for k, v in arguments.items())})"


def _append_user(out: list[Message], text: str) -> None:
    # Several results in a row, or a result then the user's words, make one user turn: many chat templates
    # insist that user and assistant alternate.
    if out and isinstance(out[-1], UserMessage):
        out[-1] = UserMessage(text=f"{out[-1].text}\n\n{text}")
    else:
        out.append(UserMessage(text=text))


# --- the streaming detector ---------------------------------------------------------------------------------

class CallDetector:
    """Finds tool calls in streamed text.

    Prose flows out as `TextDelta` as soon as it cannot be part of a call; a recognised call becomes
    `ToolCallStarted`/`ToolCallArgs`/`ToolCallDone` (after a `Notice` per repair), its text never shown.
    Held text that turns out not to be a call is released as text.
    """

    def __init__(self, tool_names: Collection[str], *, first_id: int = 1) -> None:
        self._names = frozenset(tool_names)
        self._scanner = SpanScanner(self._names)
        self._buf = ""
        self._next_id = first_id
        self.calls = 0
        self._pythonic: bool | None = None
        """Whether the reply began as a Python call (then it is held to the end: only a whole reply is one)."""

    def feed(self, delta: str) -> list[StreamEvent]:
        self._buf += delta
        return self._drain(final=False)

    def finish(self) -> list[StreamEvent]:
        return self._drain(final=True)

    def _drain(self, final: bool) -> list[StreamEvent]:
        if self._pythonic is None:
            if PYTHONIC_OPEN.match(self._buf):
                self._pythonic = True
            elif not final and (not self._buf.strip() or PYTHONIC_PREFIX.fullmatch(self._buf)):
                return []  # `The` may still become `The(`
            else:
                self._pythonic = False
        if self._pythonic:
            if not final:
                return []
            self._pythonic = False
            if found := pythonic_calls(self._buf, self._names):
                self._buf = ""
                return self._call_events(found)
        events: list[StreamEvent] = []
        text: list[str] = []
        while self._buf:
            kind, end = self._scanner.step(self._buf, 0, final)
            if kind == "wait":
                break
            span, self._buf = self._buf[:end], self._buf[end:]
            found = parse_span(span, self._names) if kind == "candidate" else None
            if found is None:
                text.append(span)
                continue
            if text:
                events.append(TextDelta("".join(text)))
                text = []
            events += self._call_events(found)
        if text:
            events.append(TextDelta("".join(text)))
        return events

    def _call_events(self, found: Extraction) -> list[StreamEvent]:
        events: list[StreamEvent] = [Notice(code="tool_call_repaired", message=r) for r in found.repairs]
        for call in found.calls:
            call_id = f"{EMULATED_ID_PREFIX}{self._next_id}"
            self._next_id += 1
            self.calls += 1
            args = call.raw if call.raw is not None else json.dumps(call.arguments, ensure_ascii=False)
            events += [ToolCallStarted(call_id, call.name), ToolCallArgs(call_id, args),
                       ToolCallDone(call_id, call.name, args)]
        return events


def next_emulated_id(messages: Iterable[Message]) -> int:
    """The first free `emu_<n>` in a conversation, so a resumed session never reuses a call id."""
    used = [int(m[1]) for msg in messages if isinstance(msg, AssistantMessage) for c in msg.tool_calls
            if (m := re.fullmatch(re.escape(EMULATED_ID_PREFIX) + r"(\d+)", c.id))]
    return max(used, default=0) + 1


# --- the providers ------------------------------------------------------------------------------------------

class EmulatedProvider:
    """Wraps any provider for a model without native tool calling.

    Unless `parallel`, a reply ends at its first call: what a small model writes after it is mostly a made-up
    result, so the rest is dropped and the inner stream closed early (then `Finished` carries no usage).
    """

    def __init__(self, inner: Provider, *, style: Style = "json", compact: bool = False,
                 parallel: bool = False) -> None:
        self.inner, self.style, self.compact, self.parallel = inner, style, compact, parallel
        self.name = inner.name

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        tools = request.tools if request.tool_choice != "none" else []
        system = request.system
        if tools:
            prompt = tool_prompt(tools, self.style, compact=self.compact, parallel=self.parallel)
            system = f"{system}\n\n{prompt}"
            if request.tool_choice == "required":
                system += "\nYou must call a tool in this reply."
            elif request.tool_choice != "auto":
                system += f"\nYou must call {request.tool_choice} in this reply."
        sent = replace(request, system=system.strip(), tools=[], tool_choice="auto",
                       messages=render_history_for_emulation(request.messages, self.style))
        detector = CallDetector([t.name for t in tools], first_id=next_emulated_id(request.messages))
        events = self.inner.stream(sent)
        finished = False
        try:
            async for event in events:
                finished = isinstance(event, Finished)
                if isinstance(event, TextDelta) and tools:
                    out = detector.feed(event.text)
                else:
                    out = [*detector.finish(), event] if finished else [event]
                if not self.parallel and detector.calls:
                    for item in _through_first_call(out):
                        yield item
                    yield event if finished else Finished(stop_reason="tool_calls")
                    return
                for item in out:
                    yield item
            if not finished:  # the stream ended without `Finished`
                out = detector.finish()
                for item in out if self.parallel or not detector.calls else _through_first_call(out):
                    yield item
        finally:
            if (aclose := getattr(events, "aclose", None)) is not None:
                await aclose()


def _through_first_call(events: list[StreamEvent]) -> list[StreamEvent]:
    done = next(i for i, e in enumerate(events) if isinstance(e, ToolCallDone))
    return events[:done + 1]


class RecoveringProvider:
    """Wraps a provider whose model is offered tools natively but may write a call as text instead.

    Native tool events pass through unchanged. When the request offers tools, the text goes through a
    `CallDetector`; calls it finds are held until the response ends and emitted only if no native call came
    (with a `tool_call_from_text` notice). Once a native call arrives, everything held is released as text.
    """

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.name = inner.name

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if not request.tools or request.tool_choice == "none":
            async for event in self.inner.stream(request):
                yield event
            return
        detector = CallDetector([t.name for t in request.tools], first_id=next_emulated_id(request.messages))
        fed: list[str] = []
        shown = 0  # characters of `fed` already out as TextDelta: always a prefix, until a call is recognised
        held: list[StreamEvent] | None = None
        passthrough = False  # a native call came, or the response ended: text goes straight out

        def route(events: list[StreamEvent]) -> list[StreamEvent]:
            nonlocal shown, held
            out: list[StreamEvent] = []
            for event in events:
                if held is None and isinstance(event, TextDelta):
                    shown += len(event.text)
                    out.append(event)
                else:
                    held = [*(held or []), event]
            return out

        def flush() -> list[StreamEvent]:
            out = route(detector.finish())
            if detector.calls:
                out.append(Notice(code="tool_call_from_text", message=(
                    f"The model sent no native tool call; recovered {detector.calls} from its text.")))
            return out + (held or [])

        async for event in self.inner.stream(request):
            if isinstance(event, TextDelta) and not passthrough:
                fed.append(event.text)
                for out in route(detector.feed(event.text)):
                    yield out
            elif isinstance(event, ToolCallStarted | ToolCallArgs | ToolCallDone) and not passthrough:
                passthrough = True
                if rest := "".join(fed)[shown:]:
                    yield TextDelta(rest)
                yield event
            elif isinstance(event, Finished) and not passthrough:
                for out in flush():
                    yield out
                passthrough = True
                yield event
            else:
                yield event
        if not passthrough:
            for out in flush():
                yield out


_TOOLS_REJECTED = re.compile(
    r"does not support tools|tools? (?:is|are) not supported|(?:unsupported|unrecognized|unknown|extra)\W+"
    r"(?:\w+\W+){0,3}['\"]?tools?\b|tool[_ ]choice.{0,40}not supported", re.IGNORECASE)


def rejects_tools(error: ProviderError) -> bool:
    """Whether a server refused the request because it carried `tools` (then retry it in emulation)."""
    return error.status in (None, 400, 404, 422, 500, 501) and bool(_TOOLS_REJECTED.search(str(error)))

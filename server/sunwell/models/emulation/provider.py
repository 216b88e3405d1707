"""Tool calling for models that cannot do it natively, and for those that only sometimes do.

`EmulatedProvider` describes the tools in the system prompt and renders the history as plain turns
(`emulation_prompt.py`), sends no `tools`, and finds the calls in the streamed text (`call_detector.py`). With
`constrained` (the model's capability) it also asks the server to constrain the reply to one call, the answer being
a call of `final_answer` (`constrained.py`); a server that cannot is sent the request without it by its adapter.
Where the model may answer, it first chooses between answering and calling free, and only a call is held to the
schema (`choice.py`).
`RecoveringProvider` is for native-but-unreliable models (local servers): it keeps native tool events as they are
and recovers a call the model wrote as text instead (docs/config.md "Model strings").
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import replace

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
from sunwell.models.emulation.call_detector import CallDetector, next_emulated_id
from sunwell.models.emulation.choice import fits
from sunwell.models.emulation.constrained import (
    ConstrainedReply,
    ConstrainedRequest,
    answer_tool,
    reply_schema,
)
from sunwell.models.emulation.prompt import (
    Style,
    constrained_prompt,
    next_step,
    render_history_for_emulation,
    tool_prompt,
)
from sunwell.wire.messages import Message, ToolResultMessage, UserMessage


class EmulatedProvider:
    """Wraps any provider for a model without native tool calling.

    Unless `parallel`, a reply ends at its first call: what a small model writes after it is mostly a made-up
    result, so the rest is dropped and the inner stream closed early (then `Finished` carries no usage).
    """

    def __init__(self, inner: Provider, *, style: Style = "json", compact: bool = False,
                 parallel: bool = False, constrained: bool = False) -> None:
        self.inner, self.style, self.compact, self.parallel = inner, style, compact, parallel
        self.constrained = constrained
        self.name = inner.name

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        tools = request.tools if request.tool_choice != "none" else []
        system = request.system
        constrained = bool(tools) and self.constrained
        listed = answer_tool(tools) if constrained else None
        answer = listed if request.tool_choice == "auto" else None
        # Constrained, the reply is bare JSON whatever the prompt says, so the prompt and the history say JSON too:
        # with Qwen's own (hermes) wording a 0.5B model re-read a file it was asked to change, where with the JSON
        # wording it wrote it (BENCHMARKS.md, "Constrained decoding").
        style: Style = "json" if constrained else self.style
        if tools:  # the same words whatever the tool choice (the schema holds a call to it): a prompt cache keeps them
            if listed:
                prompt = constrained_prompt([*tools, listed], listed.name, compact=self.compact,
                                            parallel=self.parallel)  # fmt: skip
            else:
                prompt = tool_prompt(tools, style, compact=self.compact, parallel=self.parallel)
            system = f"{system}\n\n{prompt}"
        messages = render_history_for_emulation(request.messages, style)
        # Constrained, the request is said again after the results: a 0.5B model that reads a result last re-reads
        # the file; reminded of the request there, it goes on to the write (BENCHMARKS.md, "Agentic read→write").
        if constrained and request.messages and isinstance(request.messages[-1], ToolResultMessage):
            asked = next((m.content_for_model() for m in reversed(request.messages) if isinstance(m, UserMessage)),
                         None)
            if asked:
                messages = _said_last(messages, next_step(asked, answer and answer.name))
        if tools and request.tool_choice != "auto":
            must = "a tool" if request.tool_choice == "required" else request.tool_choice
            messages = _said_last(messages, f"You must call {must} in this reply.", "\n")
        sent = replace(request, system=system.strip(), tools=[], tool_choice="auto", messages=messages)
        first_id = next_emulated_id(request.messages)
        detector: CallDetector | ConstrainedReply = CallDetector(tools, first_id=first_id, unknown_as_calls=True)
        if constrained:  # with `answer`, the adapter lets the model choose free before a call is held (choice.py)
            last = request.messages[-1] if request.messages else None
            sent = ConstrainedRequest(**{**vars(sent), "reply_schema": reply_schema(tools, request.tool_choice),
                                         "answer": answer and answer.name,
                                         "line_fits": not isinstance(last, UserMessage) or fits(last.text, tools)})
            detector = ConstrainedReply(tools, answer=answer.name if answer else None, first_id=first_id)
        events = self.inner.stream(sent)
        finished = False
        try:
            async for event in events:
                finished = isinstance(event, Finished)
                if isinstance(event, TextDelta) and tools:
                    out = detector.feed(event.text)
                else:
                    # a reply cut off by length may end inside a call: never run it (the detector drops it)
                    cut_off = finished and event.stop_reason == "length"
                    out = [*detector.finish(cut_off=cut_off), event] if finished else [event]
                if not self.parallel and detector.calls:
                    for item in _through_first_call(out):
                        yield item
                    yield event if finished else Finished(stop_reason="tool_calls")
                    return
                for item in out:
                    yield item
            if not finished:  # the stream ended without `Finished`
                out = detector.finish(cut_off=True)
                for item in out if self.parallel or not detector.calls else _through_first_call(out):
                    yield item
        finally:
            if (aclose := getattr(events, "aclose", None)) is not None:
                await aclose()


def _said_last(messages: list[Message], text: str, separator: str = "\n\n") -> list[Message]:
    """`messages` with `text` said at their end, in the last user turn (or one of its own after a reply)."""
    if messages and isinstance(last := messages[-1], UserMessage):
        return [*messages[:-1], UserMessage(text=f"{last.text}{separator}{text}")]
    return [*messages, UserMessage(text=text)]


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
        detector = CallDetector(request.tools, first_id=next_emulated_id(request.messages))
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

        def flush(cut_off: bool) -> list[StreamEvent]:
            out = route(detector.finish(cut_off=cut_off))
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
                for out in flush(event.stop_reason == "length"):
                    yield out
                passthrough = True
                yield event
            else:
                yield event
        if not passthrough:  # the stream ended without `Finished`
            for out in flush(True):
                yield out


_TOOLS_REJECTED = re.compile(
    r"does not support tools|tools? (?:is|are) not supported|(?:unsupported|unrecognized|unknown|extra)\W+"
    r"(?:\w+\W+){0,3}['\"]?tools?\b|tool[_ ]choice.{0,40}not supported", re.IGNORECASE)


def rejects_tools(error: ProviderError) -> bool:
    """Whether a server refused the request because it carried `tools` (then retry it in emulation)."""
    return error.status in (None, 400, 404, 422, 500, 501) and bool(_TOOLS_REJECTED.search(str(error)))

"""What every provider adapter speaks: a request in, canonical stream events out.

An adapter is a reducer keyed by the vendor's part id that turns SDK events into the events below. Tool calls are
complete only when the provider says so (`ToolCallDone`). SDK exceptions never leave an adapter: they are mapped
once, there, to `ProviderError`. An event's text is always encodable: a lone surrogate the provider sent (or that
a wrapper read from the model's text) is U+FFFD from the moment the event is made (`encodable.py`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from sunwell.models.encodable import encodable
from sunwell.vocabulary import NoticeCode
from sunwell.wire.messages import Message, ToolSpec, Usage

ToolChoice = Literal["auto", "none", "required"] | str
"""`auto`, `none`, `required`, or the name of the one tool the model must call."""


@dataclass(frozen=True)
class ModelRequest:
    model: str
    system: str
    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    tool_choice: ToolChoice = "auto"
    max_tokens: int = 4096
    temperature: float | None = None
    """None: the server's default."""
    first_tokens: int = 0
    """How many of the likeliest first tokens the reply's first text should carry (`TextDelta.first_tokens`), from
    a server that reports log-probabilities; 0: none asked for."""
    cache_key: str = ""
    """The session the request belongs to, which a provider may route its prompt cache by (OpenAI's
    `prompt_cache_key`); "": none."""


class _ModelOutput:
    """Every stream event: its strings, and the values of `ToolCallDone.parsed`, made encodable when it is made.

    Here, not in each adapter: every adapter, and every wrapper that makes events of what it reads in the model's
    text (emulation, recovery, constrained replies), then hands on only text the session log and the front ends
    can write."""

    def __post_init__(self) -> None:
        for name, value in self.__dict__.items():
            if (clean := encodable(value)) is not value:
                object.__setattr__(self, name, clean)  # frozen; replacing a value leaves the dict's size as it is


@dataclass(frozen=True)
class TextDelta(_ModelOutput):
    text: str
    first_tokens: tuple[tuple[str, float], ...] = ()
    """On a reply's first text, when the request asked for them: the tokens the model was likeliest to begin its
    reply with, each with its probability."""


@dataclass(frozen=True)
class ThinkingDelta(_ModelOutput):
    text: str
    signature: str | None = None
    """Anthropic's comes last in its thinking block: it closes that block (the next thinking is another part)."""


@dataclass(frozen=True)
class ToolCallStarted(_ModelOutput):
    call_id: str
    name: str


@dataclass(frozen=True)
class ToolCallArgs(_ModelOutput):
    call_id: str
    delta: str


@dataclass(frozen=True)
class ToolCallDone(_ModelOutput):
    call_id: str
    name: str
    arguments: str
    """The complete argument text, exactly as streamed."""
    parsed: dict[str, Any] | None = None
    """The arguments object when the sender has read it already (a call found in text, with its repairs told in
    `Notice`s); None: the loop reads `arguments` (`arguments.parse_arguments`)."""


@dataclass(frozen=True)
class Retrying(_ModelOutput):
    """A fault before the first delta; the request is sent again after `delay` seconds."""

    attempt: int
    delay: float
    reason: str


@dataclass(frozen=True)
class Notice(_ModelOutput):
    """Something the user should know about the stream (a repaired call, an emulation fallback…)."""

    code: NoticeCode
    message: str
    level: Literal["info", "warning", "error"] = "info"


@dataclass(frozen=True)
class Finished(_ModelOutput):
    usage: Usage | None = None
    stop_reason: str | None = None


StreamEvent = (
    TextDelta | ThinkingDelta | ToolCallStarted | ToolCallArgs | ToolCallDone | Retrying | Notice | Finished
)


class ProviderError(Exception):
    """One clear line about a provider fault. `retryable` faults before the first delta are retried."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False,
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after


class ContextOverflow(ProviderError):
    """The provider refused the request for length (models/providers/window.py reads its message); `limit` is the window it
    stated, None when it stated none (llama.cpp) or when a stream ended before its first token right after a
    request that was likely too long (llama-cpp-python says nothing else)."""

    def __init__(self, message: str, *, limit: int | None = None, status: int | None = None) -> None:
        super().__init__(message, status=status)
        self.limit = limit


class Provider(Protocol):
    name: str

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Stream one model response. Raises `ProviderError` (only) on failure."""
        ...

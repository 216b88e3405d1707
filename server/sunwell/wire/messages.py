"""The canonical, provider-neutral conversation model.

Every provider adapter maps these messages to its wire format at the edge (and only there); the loop, the session
log and the front ends see nothing else. It lives at the package top level because `agent` (which builds
conversations), `models` (which sends them) and `tools` (which produce results) all depend on it, and `models` and
`tools` must not import `agent`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field, computed_field, model_validator

from sunwell.clipping import MESSAGE_LIMIT, clip
from sunwell.vocabulary import ErrorCode, MentionKind
from sunwell.wire.base import TextPart, WireModel
from sunwell.wire.results import ResultData, ResultPart, part_text

__all__ = ["ATTACHMENTS_HEADER", "AssistantMessage", "AssistantPart", "Attachment", "Message", "SystemMessage",
           "TextPart", "ThinkingPart", "ToolCall", "ToolCallPart", "ToolError", "ToolResultMessage", "ToolSpec",
           "Usage", "UserMessage", "WireModel", "parts_of"]


ShortText = Annotated[str, AfterValidator(lambda text: clip(text, MESSAGE_LIMIT))]
"""A message (an error, a notice): whatever it quotes, a few lines at most (sunwell.clipping)."""


class ToolError(WireModel):
    """A structured failure: an error code (docs/codes.md), a message the model can act on, and maybe a fix."""

    code: ErrorCode
    message: ShortText
    suggestion: str | None = None


class ToolCall(WireModel):
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    raw: str | None = None
    """The argument text as the model wrote it, kept when it could not be parsed into an object."""


class SystemMessage(WireModel):
    role: Literal["system"] = "system"
    text: str


ATTACHMENTS_HEADER = "[Attached by the user: their content is here, there is no need to read them with a tool]"
"""Between the user's line and its attachments, in what a model reads."""
_LEGACY_HEADER = "[Attached by the user with @mentions]"
"""The header before attachments were named by their plain path: a model given `name="@a.txt"` called
`read_file("@a.txt")`. Only read, in sessions logged with it."""
_ATTACHMENT = re.compile(r'<attachment name="([^"]*)" kind="(file|selection|problems|terminal)"(?: path="([^"]*)")?>'
                         r"\n(.*?)\n</attachment>", re.DOTALL)
"""An attachment in the text of a user message logged before attachments were parts of their own."""


class Attachment(WireModel):
    """Something the user attached to a line with `@` (sunwell.agent.mentions), as it was read when the line was sent
    (cut to its share of the context window)."""

    kind: MentionKind
    label: str
    """As the user saw it: `@src/app.py`, `@selection`."""
    path: str | None = None
    """A file: workspace-relative. A selection: the file it is in."""
    body: str

    def for_model(self) -> str:
        """A block the model reads: the file by its plain workspace path (never the `@` label, which it took for a
        path to read); what has no path by its label without the `@` (`notes:notes://team/readme`)."""
        where = f'path="{_attribute(self.path)}"' if self.path else f'name="{_attribute(self.label.lstrip("@"))}"'
        return f'<attachment kind="{self.kind}" {where}>\n{self.body}\n</attachment>'

    def _legacy_block(self) -> str:
        where = f' path="{_attribute(self.path)}"' if self.path else ""
        return f'<attachment name="{_attribute(self.label)}" kind="{self.kind}"{where}>\n{self.body}\n</attachment>'


def _attribute(value: str) -> str:
    return value.replace('"', "'").replace("\n", " ")


class UserMessage(WireModel):
    """A user's line, and what they attached to it apart (`attachments`): the front ends show the line and list the
    attachments; a model reads them after the line (`content_for_model`), the same for every provider."""

    role: Literal["user"] = "user"
    text: str
    attachments: list[Attachment] = Field(default_factory=list, exclude_if=lambda attachments: not attachments)
    """Left out of the wire and the session log when there are none, as before there were attachments."""

    @model_validator(mode="before")
    @classmethod
    def _attachments_from_old_text(cls, data: Any) -> Any:
        """A session logged before attachments were a part of their own has them in the text: taken apart here
        when putting them together again gives back that very text (nothing else is taken for an attachment); the
        model then reads them as it reads today's."""
        if not isinstance(data, dict) or "attachments" in data or _LEGACY_HEADER not in data.get("text", ""):
            return data
        text: str = data["text"]
        line, separator, rest = text.partition(f"\n\n{_LEGACY_HEADER}\n\n")
        found = [Attachment.model_validate({"kind": kind, "label": label, "path": path or None, "body": body})
                 for label, kind, path, body in _ATTACHMENT.findall(rest)] if separator else []
        if not found or "\n\n".join([line, _LEGACY_HEADER, *(a._legacy_block() for a in found)]) != text:
            return data
        return {**data, "text": line, "attachments": found}

    def content_for_model(self) -> str:
        """The line, then its attachments: what a model reads for this message, the same for every provider."""
        return _for_model(self.text, self.attachments)


def _for_model(text: str, attachments: Sequence[Attachment]) -> str:
    if not attachments:
        return text
    return "\n\n".join([text, ATTACHMENTS_HEADER, *(attachment.for_model() for attachment in attachments)])


class ThinkingPart(WireModel):
    kind: Literal["thinking"] = "thinking"
    text: str
    signature: str | None = None
    """Anthropic signs each thinking block; the block goes back only with its own signature."""


class ToolCallPart(WireModel):
    kind: Literal["tool_call"] = "tool_call"
    call: ToolCall


AssistantPart = Annotated[TextPart | ThinkingPart | ToolCallPart, Field(discriminator="kind")]

_OLD_FIELDS = {"text": "text", "thinking": "thinking", "thinking_signature": "thinking_signature",
               "thinkingSignature": "thinking_signature", "tool_calls": "tool_calls", "toolCalls": "tool_calls"}
"""The fields of an assistant message before parts, by name and by wire alias."""


class AssistantMessage(WireModel):
    """What the model answered, part by part in the order it came (pydantic-ai's `ModelResponse.parts`).

    `text`, `thinking` and `tool_calls` are read from the parts, for readers that need no more; they are on the wire
    too (clients read them) but not in the session log. The old shape (those fields and `thinking_signature`, as
    logs before parts hold them) is still accepted, also as keyword arguments: it becomes thinking, text, tool calls.
    """

    role: Literal["assistant"] = "assistant"
    parts: list[AssistantPart] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _parts_from_old_fields(cls, data: Any) -> Any:
        if not isinstance(data, dict) or _OLD_FIELDS.keys().isdisjoint(data):
            return data
        data = dict(data)
        old = {_OLD_FIELDS[key]: data.pop(key) for key in list(data) if key in _OLD_FIELDS}
        if "parts" not in data:  # with parts, the other fields are what was read from them
            data["parts"] = parts_of(**old)
        return data

    @computed_field
    @property
    def text(self) -> str:
        return "".join(part.text for part in self.parts if isinstance(part, TextPart))

    @computed_field
    @property
    def thinking(self) -> str:
        return "".join(part.text for part in self.parts if isinstance(part, ThinkingPart))

    @computed_field
    @property
    def tool_calls(self) -> list[ToolCall]:
        return [part.call for part in self.parts if isinstance(part, ToolCallPart)]


def parts_of(*, text: str | None = "", thinking: str | None = "", thinking_signature: str | None = None,
             tool_calls: Sequence[ToolCall | dict[str, Any]] | None = ()) -> list[AssistantPart]:
    """The parts of an assistant message in the old shape: its thinking, then its text, then its tool calls."""
    parts: list[AssistantPart] = []
    if thinking or thinking_signature:
        parts.append(ThinkingPart(text=thinking or "", signature=thinking_signature))
    if text:
        parts.append(TextPart(text=text))
    parts += [ToolCallPart(call=call) for call in tool_calls or ()]
    return parts


class ToolResultMessage(WireModel):
    """A call's result. A tool gives back parts (wire/results.py); `output` is their text, what the `toolResult`
    event's `output` shows (docs/events.md "toolResult") and what a model that reads only text reads. A result of
    one text part (almost every one, and every result logged before parts) has no `parts`: `output` is that part, so
    such a result reads, logs and goes to each provider as it always did."""

    role: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str
    output: str
    ok: bool = True
    error: ToolError | None = None
    parts: list[ResultPart] | None = Field(None, exclude_if=lambda parts: parts is None)
    """The result as the tool gave it, when it is more than one text (an image, JSON data, a resource link)."""
    data: ResultData | None = Field(None, exclude_if=lambda data: data is None)
    """What a front end draws the result from (never sent to a model)."""

    @classmethod
    def of(cls, call_id: str, name: str, parts: Sequence[ResultPart], data: ResultData | None = None
           ) -> ToolResultMessage:
        """The result of parts: `output` their text, one line each; one text part is kept as `output` alone."""
        text = "\n".join(shown for part in parts if (shown := part_text(part)))
        kept = None if all(isinstance(part, TextPart) for part in parts) and len(parts) <= 1 else list(parts)
        return cls(call_id=call_id, name=name, output=text, parts=kept, data=data)

    @property
    def content(self) -> list[ResultPart]:
        """The parts a provider maps (models/providers/): `parts`, else the text part `output`."""
        if self.parts is not None:
            return list(self.parts)
        return [TextPart(text=self.output)] if self.output else []

    def with_note(self, before: str = "", after: str = "") -> ToolResultMessage:
        """This result with a note before or after what the tool gave (a repeat's, a hook's), an empty line between."""
        if self.parts is None:
            output = f"{before}\n\n{self.output}" if before else self.output
            return self.model_copy(update={"output": f"{output.rstrip()}\n\n{after}" if after else output})
        parts = [*([TextPart(text=before + "\n")] if before else []), *self.parts,
                 *([TextPart(text="\n" + after)] if after else [])]
        return ToolResultMessage.of(self.call_id, self.name, parts, self.data).model_copy(
            update={"ok": self.ok, "error": self.error})

    def content_for_model(self) -> str:
        """The text a model reads for this result, the same for every provider that takes text only."""
        if self.error is None:
            return self.output
        lines = [f"Error [{self.error.code}]: {self.error.message}"]
        if self.error.suggestion:
            lines.append(f"Suggestion: {self.error.suggestion}")
        if self.output:
            lines.append(self.output)
        return "\n".join(lines)


Message = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolResultMessage, Field(discriminator="role")
]


class ToolSpec(BaseModel):
    """A tool as offered to a model: its name, what it does, and a JSON Schema for its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


class Usage(WireModel):
    input_tokens: int = 0
    """Every token of the prompt, those read from or written to the provider's prompt cache included."""
    output_tokens: int = 0
    cache_read_tokens: int = 0
    """Of `input_tokens`: read from the prompt cache (billed at the model's `cache_read` price)."""
    cache_write_tokens: int = 0
    """Of `input_tokens`: written to the prompt cache (Anthropic's breakpoints; billed at `cache_write`)."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )

"""The canonical, provider-neutral conversation model.

Every provider adapter maps these messages to its wire format at the edge (and only there); the loop, the session
log and the front ends see nothing else. It lives at the package top level because `agent` (which builds
conversations), `models` (which sends them) and `tools` (which produce results) all depend on it, and `models` and
`tools` must not import `agent`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class WireModel(BaseModel):
    """Python fields are snake_case; on the wire (events, JSON-RPC, exports) they are camelCase."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    def wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json")


class ToolError(WireModel):
    """A structured failure: a PROTOCOL.md error code, a message the model can act on, and maybe a fix."""

    code: str
    message: str
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


class UserMessage(WireModel):
    role: Literal["user"] = "user"
    text: str


class AssistantMessage(WireModel):
    role: Literal["assistant"] = "assistant"
    text: str = ""
    thinking: str = ""
    thinking_signature: str | None = None
    """Anthropic signs thinking blocks; the signature must travel back with them."""
    tool_calls: list[ToolCall] = Field(default_factory=list)


class ToolResultMessage(WireModel):
    role: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str
    output: str
    ok: bool = True
    error: ToolError | None = None

    def content_for_model(self) -> str:
        """The text a model reads for this result, the same for every provider."""
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
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )

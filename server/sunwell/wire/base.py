"""The base of every wire model, and the text part both an answer and a tool result are made of."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class WireModel(BaseModel):
    """Python fields are snake_case; on the wire (events, JSON-RPC, exports) they are camelCase.

    Each model's validator is built when the model is first used, not at import (`defer_build`): the sidecar
    defines some seventy and needs a handful before it answers its first request (BENCHMARKS.md, "Speed")."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, defer_build=True)

    def wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json")


class TextPart(WireModel):
    kind: Literal["text"] = "text"
    text: str

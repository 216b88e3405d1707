"""What reading a model's text for tool calls gives (`FoundCall`, `Extraction`), and the offered tools it is read
against (`Offered`): their names, and each one's parameter schema, which types arguments written as bare text
(`arguments.typed_value`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Self

from sunwell.models.arguments import typed_value
from sunwell.wire.messages import ToolSpec

Offered = Mapping[str, dict[str, Any]]
"""Offered tools: name -> parameter schema (`{}` when unknown)."""


def offered(tools: Iterable[str | ToolSpec] | Offered) -> Offered:
    """Tool names, `ToolSpec`s or an `Offered` mapping, as an `Offered` mapping."""
    if isinstance(tools, Mapping):
        return tools
    tools = list(tools)
    return {t.name: t.parameters for t in tools if isinstance(t, ToolSpec)} | {
        t: {} for t in tools if isinstance(t, str)
    }


def parameter_schema(tools: Offered, name: str, parameter: str) -> dict[str, Any] | None:
    properties = (tools.get(name) or {}).get("properties")
    return properties.get(parameter) if isinstance(properties, dict) else None


class _NameAndArguments(NamedTuple):
    name: str
    arguments: dict[str, Any]


class FoundCall(_NameAndArguments):
    """A `(name, arguments)` pair. `raw` rides along (outside the tuple, so not in `==`): the argument text
    when it could not be read as an object, in which case `arguments` is empty."""

    raw: str | None

    def __new__(cls, name: str, arguments: dict[str, Any], raw: str | None = None) -> Self:
        call = super().__new__(cls, name, arguments)
        call.raw = raw
        return call

    def __repr__(self) -> str:
        raw = f", raw={self.raw!r}" if self.raw is not None else ""
        return f"FoundCall({self.name!r}, {self.arguments!r}{raw})"


@dataclass
class Extraction:
    calls: list[FoundCall] = field(default_factory=list)
    remaining_text: str = ""
    """The text with every call's text (and every dialect's control tokens) removed, otherwise as written."""
    repairs: list[str] = field(default_factory=list)
    thinking: str = ""
    """Reasoning the text carried in a dialect's own channel (gpt-oss' `analysis`), kept out of the answer."""
    cut_off: list[str] = field(default_factory=list)
    """Calls whose JSON or closing marker never came (the reply ended inside them): never run, never shown."""
    unreadable: list[str] = field(default_factory=list)
    """Text between a family's call markers that says no call (no name, no arguments that can be read)."""
    unknown: list[FoundCall] = field(default_factory=list)
    """Calls of a tool that was not offered: no calls of the reply (the parsers' tests say so), never run."""


def schema_typed(tools: Offered, call: FoundCall) -> FoundCall:
    """The call with each argument written as a string that its schema types otherwise (`"2"` for an integer) read
    as that type (a dialect whose values are all strings: Gemma's delimited ones, K2 Horizon's)."""

    def typed(key: str, value: Any) -> Any:
        schema = parameter_schema(tools, call.name, key)
        kinds = (schema or {}).get("type") or "string"
        if not isinstance(value, str) or "string" in (kinds if isinstance(kinds, list) else [kinds]):
            return value
        return typed_value(value, schema)

    return FoundCall(call.name, {k: typed(k, v) for k, v in call.arguments.items()}, raw=call.raw)

"""A tool's arguments as a typed model: its JSON schema (what the model is shown), the call's subject, and which
arguments carry text into a file (`CONTENT`, tools/subject.py).

A tool is declared from its model (`Tool.of`, tools/base.py). The schema is generated in the shape the tools have
always sent, key for key and in the same order (a test holds it to the published schemas): the wire, the emulation
prompts that print it, and prompt caches see no change. A call's arguments are checked against that schema first
(tools/validation.py words the errors for the model), then read into the model, once (`Tool.bind`): the handler,
its preview and the subject take the instance.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from sunwell.tools.subject import CONTENT, Subject

# A schema's keys in the order the hand-written schemas had: what is checked first, then words, then the default.
_KEY_ORDER = {"type": 0, "properties": 1, "required": 2, "description": 4, "default": 5, "additionalProperties": 6}


class _ToolSchema(GenerateJsonSchema):
    """Plain JSON Schema for a tool: no titles, an optional argument is just its type (absent, never null)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        if schema.get("default") is None:  # "not given" is no default the model should see
            return self.generate_inner(schema["schema"])
        return super().default_schema(schema)

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        generated = super().model_schema(schema)
        generated.pop("title", None)
        generated.pop("description", None)  # the model's docstring is for readers; the tool has its description
        generated.setdefault("required", [])
        return generated

    def sort(self, value: JsonSchemaValue, parent_key: str | None = None) -> JsonSchemaValue:
        if not isinstance(value, dict):
            return value
        keys = list(value) if parent_key == "properties" else sorted(value, key=lambda k: _KEY_ORDER.get(k, 3))
        return {key: self.sort(value[key], key) for key in keys}


def _inlined(node: Any, defs: dict[str, Any]) -> Any:
    """`node` with each `$ref` to a nested model replaced by that model's schema: providers and the emulation
    prompts want a tool's parameters in one piece (update_plan's steps)."""
    if isinstance(node, list):
        return [_inlined(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return _inlined(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    return {key: _inlined(value, defs) for key, value in node.items()}


class ToolArguments(BaseModel):
    """The base of a core tool's arguments model: unknown arguments are refused, as the schema says."""

    model_config: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    @classmethod
    def schema_for_tool(cls) -> dict[str, Any]:
        schema = cls.model_json_schema(schema_generator=_ToolSchema)
        return _inlined(schema, schema.pop("$defs", {}))

    @classmethod
    def content_fields(cls) -> frozenset[str]:
        """The arguments marked `CONTENT`: text a call carries into a file."""
        return frozenset(name for name, field in cls.model_fields.items() if CONTENT in field.metadata)

    def subject(self) -> Subject:
        """What the call touches, for policy (tools/subject.py); a tool whose calls touch something says so."""
        return Subject()

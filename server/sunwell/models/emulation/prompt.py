"""What a model without native tool calling reads: the tools and a call format in its system prompt
(`tool_prompt`), and the history with calls and results written as plain turns (`render_history_for_emulation`).

The calls it writes back are found by `call_detector.py`; `emulation.py` wraps a provider with both.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal, assert_never

from sunwell.wire.messages import (
    AssistantMessage,
    AssistantPart,
    Message,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from sunwell.wire.results import ImagePart

Style = Literal["json", "xml", "hermes", "llama3", "mistral", "harmony"]
"""`json`: a ```json block; `xml`: an element per call. The others are a family's own trained format, worded as its
chat template words it (the registry picks them, `capabilities.py`): `hermes`, Qwen's and Hermes' (function
signatures as JSON inside `<tools>`, calls as JSON inside `<tool_call>`), which small Qwen models follow far
better than any format described to them (BENCHMARKS.md, "Tool-calling accuracy"); `llama3`, Llama 3.1's JSON
after `<|python_tag|>`; `mistral`, `[TOOL_CALLS]name[ARGS]{...}`; `harmony`, gpt-oss' TypeScript-like namespace
of functions, called on the commentary channel. Whatever the style, the detector reads every format."""
FAMILY_STYLES = ("hermes", "llama3", "mistral", "harmony")


def tool_prompt(tools: list[ToolSpec], style: Style = "json", *, compact: bool = False,
                parallel: bool = False) -> str:
    """The system-prompt section that offers `tools` and says how to call them in `style`."""
    if style == "hermes":
        return _hermes_prompt(tools, compact=compact, parallel=parallel)
    if style in ("llama3", "mistral", "harmony"):
        return _family_prompt(tools, style, compact=compact, parallel=parallel)
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
    signatures = "\n".join(_signature_json(t, compact) for t in tools)
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


_LLAMA3_ASK = ("Given the following functions, please respond with a JSON for a function call with its proper "
               "arguments that best answers the given prompt.")
_LLAMA3_FORMAT = ('Respond in the format <|python_tag|>{"name": function name, "parameters": dictionary of argument '
                  "name and its value}. Do not use variables.")


def _family_prompt(tools: list[ToolSpec], style: Style, *, compact: bool, parallel: bool) -> str:
    """Llama 3.1's, Mistral's and gpt-oss' own wording of the tools and of a call."""
    example = tools[0] if tools else ToolSpec(name="tool_name", description="", parameters={})
    args = {p: _example_value(s) for p, s in _params(example) if p in _required(example)}
    signatures = [_signature_json(t, compact) for t in tools]
    if style == "llama3":
        lines = ["# Tools", "", _LLAMA3_ASK, "", _LLAMA3_FORMAT, "", *signatures]
    elif style == "mistral":
        lines = ["# Tools", "", "[AVAILABLE_TOOLS][" + ", ".join(signatures) + "][/AVAILABLE_TOOLS]", "",
                 "To call a function, write [TOOL_CALLS], its name, [ARGS] and its arguments as a JSON object:",
                 render_call(example.name, args, style)]
    else:
        lines = ["# Valid channels: analysis, commentary, final. Channel must be included for every message.",
                 "Calls to these tools must go to the commentary channel: 'functions'.", "", "# Tools", "",
                 "## functions", "", "namespace functions {", "",
                 *(_typescript(t, compact) for t in tools), "} // namespace functions"]
    if not parallel:
        lines += ["", "Call one function per reply, then stop: its result comes in the next message."]
    return "\n".join(lines)


def constrained_prompt(tools: list[ToolSpec], answer: str | None, *, compact: bool = False,
                       parallel: bool = False) -> str:
    """What a model reads when the server constrains its reply to one call (`constrained.py`).

    The tools are their JSON signatures, as in the family prompts: a compact one-line list drops the parameters'
    descriptions, which hold their defaults, and a 0.5B model then filled optional parameters with values of its
    own (`"unit": "mi"` where the description says km). Each lists its required parameters first, in the order the
    grammar compilers (llama.cpp's, llama-cpp-python's) let them be written: listed in another order, the model
    meant an optional parameter after the first required one, could not write it there, and left it out. The
    call's shape is shown without example values, which the model copied (`"case_id": "..."`). BENCHMARKS.md,
    "Constrained decoding", has the measurements."""
    lines = ["# Tools", "", "You can call these tools:", "",
             *(_signature_json(_required_first(t), compact) for t in tools), "",
             "To call a tool, reply with one JSON object, with the tool's name and its arguments:",
             '{"name": <tool-name>, "arguments": <args-json-object>}', "",
             "To call several tools, write one object after the other." if parallel else
             "Call one tool per reply, then stop: its result comes in the next message.",
             "Use only the tools listed above, with their exact names."]
    if answer is not None:
        lines.append(f"When you have what you need, call {answer} with your reply to the user.")
    return "\n".join(lines)


def next_step(request: str, answer: str | None) -> str:
    """Said after a constrained model's tool results: the user's request, and what to do now."""
    done = f", or {answer} if it is done" if answer else ""
    return f"The request was: {request}\nCall the tool for its next step{done}."


def _signature_json(tool: ToolSpec, compact: bool) -> str:
    """A tool as OpenAI's `tools` array holds it, which chat templates copy into the prompt."""
    description = _first_sentence(tool.description) if compact else tool.description.strip()
    return json.dumps({"type": "function", "function": {
        "name": tool.name, "description": description, "parameters": tool.parameters}}, ensure_ascii=False)


def _required_first(tool: ToolSpec) -> ToolSpec:
    properties = tool.parameters.get("properties")
    if not isinstance(properties, dict):
        return tool
    required = _required(tool)
    ordered = sorted(properties.items(), key=lambda item: item[0] not in required)  # stable: keeps each group's order
    return tool.model_copy(update={"parameters": {**tool.parameters, "properties": dict(ordered)}})


def _typescript(tool: ToolSpec, compact: bool) -> str:
    """A tool as gpt-oss' harmony format declares it: `type name = (_: {...}) => any;`."""
    description = _first_sentence(tool.description) if compact else tool.description.strip()
    lines = [f"// {line}" for line in description.splitlines() if line.strip()]
    params = _params(tool)
    if not params:
        return "\n".join([*lines, f"type {tool.name} = () => any;", ""])
    lines.append(f"type {tool.name} = (_: {{")
    for param, schema in params:
        if schema.get("description") and not compact:
            lines.append(f"// {schema['description']}")
        optional = "" if param in _required(tool) else "?"
        default = f" // default: {json.dumps(schema['default'])}" if "default" in schema else ""
        lines.append(f"{param}{optional}: {_ts_type(schema)},{default}")
    return "\n".join([*lines, "}) => any;", ""])


def _ts_type(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(_ts_type({**schema, "type": k}) for k in kind)
    if kind == "array":
        return f"{_ts_type(schema.get('items') or {})}[]"
    return {"string": "string", "integer": "number", "number": "number", "boolean": "boolean",
            "object": "object", "null": "null"}.get(kind, "any")


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
    if style == "llama3":
        return "<|python_tag|>" + json.dumps({"name": name, "parameters": arguments}, ensure_ascii=False)
    if style == "mistral":
        return f"[TOOL_CALLS]{name}[ARGS]{json.dumps(arguments, ensure_ascii=False)}"
    if style == "harmony":
        return (f"<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>"
                f"{json.dumps(arguments, ensure_ascii=False)}<|call|>")
    params = [f"<{k}>{v if isinstance(v, str) else json.dumps(v)}</{k}>" for k, v in arguments.items()]
    return "\n".join([f"<{name}>", *params, f"</{name}>"])


def render_history_for_emulation(messages: Iterable[Message], style: Style = "json") -> list[Message]:
    """Tool calls become assistant text and tool results user turns, for servers that know no tool roles."""
    out: list[Message] = []
    calls: dict[str, dict[str, Any]] = {}
    for msg in messages:
        if isinstance(msg, AssistantMessage) and msg.tool_calls:
            calls.update({c.id: c.arguments for c in msg.tool_calls})
            out.append(_as_text(msg, style))
        elif isinstance(msg, ToolResultMessage) and style == "hermes":
            _append_user(out, f"<tool_response>\n{msg.content_for_model()}\n</tool_response>", _images(msg))
        elif isinstance(msg, ToolResultMessage):
            signature = _signature(msg.name, calls.get(msg.call_id, {}))
            _append_user(out, f"Result of {signature}:\n{msg.content_for_model()}", _images(msg))
        elif isinstance(msg, UserMessage):
            _append_user(out, msg.content_for_model(), msg.images)
        else:
            out.append(msg)
    return out


def _as_text(msg: AssistantMessage, style: Style) -> AssistantMessage:
    """The message with its calls written out where they were made; thinking is kept, ahead of the text."""
    thinking: list[AssistantPart] = []
    text: list[str] = []
    for part in msg.parts:
        match part:
            case TextPart():
                text.append(part.text)
            case ThinkingPart():
                thinking.append(part)
            case ToolCallPart(call=call):
                text.append(render_call(call.name, call.arguments, style))
            case _:
                assert_never(part)
    return AssistantMessage(parts=[*thinking, TextPart(text="\n".join(text).strip())])


def _signature(name: str, arguments: dict[str, Any]) -> str:
    def short(value: Any) -> str:
        text = json.dumps(value, ensure_ascii=False)
        return text if len(text) <= 60 else text[:57] + "…"
    return f"{name}({', '.join(f'{k}={short(v)}' for k, v in arguments.items())})"


def _append_user(out: list[Message], text: str, images: Sequence[ImagePart] = ()) -> None:
    # Several results in a row, or a result then the user's words, make one user turn: many chat templates
    # insist that user and assistant alternate. A result's images go with it, as a user's would: a model that sees
    # is shown them (one that cannot reads a note in their place, models/vision.py).
    if out and isinstance(out[-1], UserMessage):
        out[-1] = UserMessage(text=f"{out[-1].text}\n\n{text}", images=[*out[-1].images, *images])
    else:
        out.append(UserMessage(text=text, images=list(images)))


def _images(result: ToolResultMessage) -> list[ImagePart]:
    return [part for part in result.content if isinstance(part, ImagePart)] if result.error is None else []

"""Issue 16, item 3: an emulated model is taught its family's own call format (Qwen hermes, Llama 3 JSON after
<|python_tag|>, Mistral [TOOL_CALLS], gpt-oss harmony), chosen by the capability registry and overridable per
model; whatever it was taught, what it writes back is read."""

from __future__ import annotations

import json

import pytest

from sunwell.models.capabilities import CapabilityOverrideError, capabilities_for
from sunwell.models.emulation.prompt import (
    FAMILY_STYLES,
    render_call,
    render_history_for_emulation,
    tool_prompt,
)
from sunwell.wire.messages import AssistantMessage, ToolCall, ToolResultMessage, ToolSpec, UserMessage
from text_calls import extract_tool_calls

TOOLS = [
    ToolSpec(
        name="read_file",
        description="Read a text file. Lines are numbered.",
        parameters={
            "type": "object",
            "required": ["path"],
            "properties": {
                "path": {"type": "string", "description": "Path relative to the workspace."},
                "limit": {"type": "integer", "default": 200},
                "mode": {"enum": ["fast", "safe"]},
            },
        },
    ),
    ToolSpec(name="list_files", description="List files.", parameters={"type": "object", "properties": {}}),
]
NAMES = [t.name for t in TOOLS]


@pytest.mark.parametrize(
    ("model", "provider", "style"),
    [
        ("qwen3:8b", "ollama", "hermes"),
        ("Qwen/Qwen2.5-7B-Instruct", "openai-compatible", "hermes"),
        ("qwen2.5-coder-0.5b", "openai-compatible", "hermes"),
        ("qwq:32b", "ollama", "hermes"),
        ("llama3.1:8b", "ollama", "llama3"),
        ("meta-llama/Llama-3.3-70B-Instruct", "openai-compatible", "llama3"),
        ("mistral-small3.2:24b", "ollama", "mistral"),
        ("mistralai/Devstral-Small-2507", "openai-compatible", "mistral"),
        ("magistral:24b", "ollama", "mistral"),
        ("gpt-oss:20b", "ollama", "harmony"),
        ("openai/gpt-oss-120b", "openai-compatible", "harmony"),
        ("llama3:8b", "ollama", "json"),  # Llama 3.0 had no tool format
        ("phi4", "ollama", "json"),  # no trained format known
        ("gpt-4o", "openai", "json"),
    ],
)
def test_the_registry_picks_the_family_format(model, provider, style):
    assert capabilities_for(model, provider).emulation == style


def test_a_model_override_chooses_another_format():
    assert capabilities_for("qwen3", "ollama", {"qwen3": {"emulation": "json"}}).emulation == "json"
    assert capabilities_for("phi4", "ollama", {"phi4": {"emulation": "mistral"}}).emulation == "mistral"
    with pytest.raises(CapabilityOverrideError, match="hermes, llama3, mistral, harmony"):
        capabilities_for("phi4", "ollama", {"phi4": {"emulation": "yaml"}})


@pytest.mark.parametrize("style", FAMILY_STYLES)
@pytest.mark.parametrize("compact", [False, True])
def test_the_prompt_offers_every_tool_and_parameter(style, compact):
    prompt = tool_prompt(TOOLS, style, compact=compact)
    for name in ("read_file", "list_files", "path", "limit"):
        assert name in prompt
    assert "Call one function per reply" in prompt
    assert "Call one function per reply" not in tool_prompt(TOOLS, style, parallel=True)


def test_each_family_prompt_is_worded_as_its_template_words_it():
    assert 'Respond in the format <|python_tag|>{"name": function name, "parameters":' in tool_prompt(
        TOOLS, "llama3"
    )
    mistral = tool_prompt(TOOLS, "mistral")
    tools = json.loads(mistral[mistral.index("[AVAILABLE_TOOLS]") + 17 : mistral.index("[/AVAILABLE_TOOLS]")])
    assert [t["function"]["name"] for t in tools] == NAMES
    harmony = tool_prompt(TOOLS, "harmony")
    assert "Calls to these tools must go to the commentary channel: 'functions'." in harmony
    assert (
        "type read_file = (_: {\n// Path relative to the workspace.\npath: string,\nlimit?: number, "
        '// default: 200\nmode?: "fast" | "safe",\n}) => any;'
    ) in harmony
    assert "type list_files = () => any;" in harmony


@pytest.mark.parametrize("style", ["json", "xml", *FAMILY_STYLES])
def test_a_call_written_in_the_taught_format_is_read_back(style):
    text = render_call("read_file", {"path": "a.txt", "limit": 3}, style)
    out = extract_tool_calls(text, TOOLS)
    assert out.calls == [("read_file", {"path": "a.txt", "limit": 3})] and out.remaining_text.strip() == ""


def test_the_mistral_example_is_a_call_with_the_required_arguments():
    prompt = tool_prompt(TOOLS, "mistral")
    example = prompt[prompt.index("[/AVAILABLE_TOOLS]") + len("[/AVAILABLE_TOOLS]") :]
    assert extract_tool_calls(example, TOOLS).calls == [("read_file", {"path": "..."})]


@pytest.mark.parametrize("style", FAMILY_STYLES)
def test_past_calls_render_in_the_family_format(style):
    history = [
        UserMessage(text="Read a.txt"),
        AssistantMessage(
            text="", tool_calls=[ToolCall(id="emu_1", name="read_file", arguments={"path": "a"})]
        ),
        ToolResultMessage(call_id="emu_1", name="read_file", output="hello"),
    ]
    rendered = render_history_for_emulation(history, style)
    assert [m.role for m in rendered] == ["user", "assistant", "user"]
    assert rendered[1].text == render_call("read_file", {"path": "a"}, style)
    assert extract_tool_calls(rendered[1].text, NAMES).calls == [("read_file", {"path": "a"})]
    assert "hello" in rendered[2].text

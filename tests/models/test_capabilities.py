"""Model ids and the capability registry: parser table, version and size limits, inheritance, overrides."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from sunwell.models.capabilities import (
    CapabilityOverrideError,
    capabilities_for,
    default_provider,
    describe,
    parse_model_id,
)

# id -> family, version, size (billions), variant, provider hint, org, custom
PARSE_TABLE = {
    "gpt-4o": ("gpt", (4,), None, "o", None, None, False),
    "gpt-4-turbo": ("gpt", (4,), None, "turbo", None, None, False),
    "gpt-3.5-turbo": ("gpt", (3, 5), None, "turbo", None, None, False),
    "gpt-3.5-turbo-0125": ("gpt", (3, 5), None, "turbo", None, None, False),
    "o1-preview": ("o", (1,), None, "preview", None, None, False),
    "claude-3.5-sonnet": ("claude", (3, 5), None, "sonnet", None, None, False),
    "claude-3-5-sonnet-20241022": ("claude", (3, 5), None, "sonnet", None, None, False),
    "claude-3-opus": ("claude", (3,), None, "opus", None, None, False),
    "claude-sonnet-4-20250514": ("claude", (4,), None, "sonnet", None, None, False),
    "claude-opus-4-1-20250805": ("claude", (4, 1), None, "opus", None, None, False),
    "llama3.3:70b": ("llama", (3, 3), 70.0, None, None, None, False),
    "meta-llama/Llama-3.3-70B-Instruct": ("llama", (3, 3), 70.0, "instruct", None, "meta-llama", False),
    "qwen2.5:32b": ("qwen", (2, 5), 32.0, None, None, None, False),
    "qwen3": ("qwen", (3,), None, None, None, None, False),
    "ollama/llama3.3:70b": ("llama", (3, 3), 70.0, None, "ollama", None, False),
    "ollama:qwen2.5:7b": ("qwen", (2, 5), 7.0, None, "ollama", None, False),
    "mycompany/llama3-ft": ("llama", (3,), None, None, None, "mycompany", True),
    "qwen2.5-coder-0.5b": ("qwen", (2, 5), 0.5, "coder", None, None, False),
    "Qwen/Qwen2.5-Coder-7B-Instruct": ("qwen", (2, 5), 7.0, "coder", None, "Qwen", False),
    "mistral-large": ("mistral", (), None, "large", None, None, False),
    "mistral-7b-instruct-v0.3": ("mistral", (0, 3), 7.0, "instruct", None, None, False),
    "gemini-2.0-flash": ("gemini", (2, 0), None, "flash", None, None, False),
    "deepseek-r1": ("deepseek", (), None, "r1", None, None, False),
    "smollm2:135m": ("smollm", (2,), 0.135, None, None, None, False),
    "mixtral:8x7b": ("mixtral", (), 56.0, None, None, None, False),
    "ft:gpt-4o-mini-2024-07-18:my-org::abc123": ("gpt", (4,), None, "o", None, None, True),
    "hf.co/bartowski/Qwen2.5-Coder-0.5B-Instruct-GGUF:Q4_K_M": (
        "qwen", (2, 5), 0.5, "coder", None, "bartowski", False),
}


@pytest.mark.parametrize("model_id", PARSE_TABLE)
def test_parse_model_id(model_id):
    mid = parse_model_id(model_id)
    got = (mid.family, mid.version, mid.size, mid.variant, mid.provider, mid.org, mid.custom)
    assert got == PARSE_TABLE[model_id]
    assert mid.raw == model_id


def test_tags_keep_every_descriptive_word():
    assert parse_model_id("Qwen/Qwen2.5-Coder-7B-Instruct").tags == ("coder", "instruct")
    assert parse_model_id("gpt-4o-mini").tags == ("o", "mini")


@pytest.mark.parametrize(("model_id", "provider"), [
    ("gpt-4o", "openai"), ("o1-preview", "openai"), ("claude-3-opus", "anthropic"),
    ("ollama/llama3.3:70b", "ollama"), ("llama3.3:70b", None), ("qwen2.5-coder-0.5b", None),
])
def test_default_provider(model_id, provider):
    assert default_provider(model_id) == provider


def caps(model_id, provider="ollama", overrides=None):
    return capabilities_for(model_id, provider, overrides or {})


@pytest.mark.parametrize(("model_id", "native"), [
    ("qwen2.5-coder-0.5b", False), ("qwen2.5-coder:1.5b", False), ("qwen2.5-coder:3b", True),
    ("qwen2.5-coder:7b", True),
    ("qwen2.5-coder", True),  # no size in the id: Ollama's default tag is the 7B
    ("qwen2.5:0.5b", True),  # the general model, not the coder
    ("llama2", False), ("llama3", False), ("llama3.1:8b", True), ("llama3.3:70b", True),
    ("gemma:2b", False), ("gemma2:9b", False), ("gemma3:4b", True),
    ("phi-2", False), ("phi3:mini", False), ("phi4", True),
    ("smollm2:135m", False), ("codellama:7b", False),
])
def test_local_registry_knows_which_models_cannot_call_tools(model_id, native):
    assert caps(model_id, "openai-compatible").native_tools is native
    assert caps(model_id, "ollama").native_tools is native


def test_small_is_size_bounded():
    assert caps("qwen2.5-coder-0.5b").small
    assert caps("llama3.2:3b").small
    assert not caps("qwen2.5-coder:7b").small
    assert not caps("qwen3").small  # size unknown
    assert caps("smollm2").small  # the whole family is small


def test_gpt_versions():
    gpt35, gpt4, gpt4o = (caps(m, "openai") for m in ("gpt-3.5-turbo", "gpt-4", "gpt-4o"))
    assert gpt35.native_tools and gpt4.native_tools and gpt4o.native_tools
    assert (gpt35.context_window, gpt4.context_window, gpt4o.context_window) == (16_385, 8192, 128_000)
    assert not gpt4.parallel_calls and gpt4o.parallel_calls and gpt35.parallel_calls
    assert caps("gpt-4-turbo", "openai").context_window == 128_000
    assert caps("gpt-4.1", "openai").context_window > 1_000_000
    assert not any(c.recover_text_calls for c in (gpt35, gpt4, gpt4o))


def test_o_series():
    assert not caps("o1-preview", "openai").native_tools
    assert not caps("o1-mini", "openai").native_tools
    o3 = caps("o3-mini", "openai")
    assert o3.native_tools and o3.reasoning


def test_claude_versions():
    c3, c35, c37, c4 = (caps(m, "anthropic") for m in (
        "claude-3-opus", "claude-3.5-sonnet", "claude-3-7-sonnet-latest", "claude-sonnet-4-20250514"))
    assert all(c.native_tools and c.context_window == 200_000 for c in (c3, c35, c37, c4))
    assert (c3.reasoning, c35.reasoning, c37.reasoning, c4.reasoning) == (False, False, True, True)
    assert caps("claude-opus-4-1-20250805", "anthropic").reasoning
    assert not caps("claude-2.1", "anthropic").native_tools
    assert c3.emulation == "xml"


def test_qwen3_thinks_and_qwen25_does_not():
    assert caps("qwen3").reasoning and not caps("qwen2.5:32b").reasoning


@pytest.mark.parametrize(("custom", "base"), [
    ("mycompany/llama3-ft", "llama3"),
    ("mycompany/llama3.1-8b-support-ft", "llama3.1:8b"),
    ("acme/qwen2.5-coder-0.5b-sql", "qwen2.5-coder-0.5b"),
    ("ollama/llama3.3:70b", "llama3.3:70b"),
])
def test_custom_ids_inherit_their_family(custom, base):
    assert parse_model_id(custom).family == parse_model_id(base).family
    got, want = caps(custom), caps(base)
    assert replace(got, notes=()) == replace(want, notes=())


@pytest.mark.parametrize(("provider", "native", "parallel", "context", "recover"), [
    ("openai", True, True, 128_000, False),
    ("anthropic", True, True, 200_000, False),
    ("ollama", True, False, 8192, True),
    ("openai-compatible", True, False, 8192, True),
])
def test_unknown_id_defaults_per_provider(provider, native, parallel, context, recover):
    c = caps("zorblax-9", provider)
    assert (c.native_tools, c.parallel_calls, c.context_window, c.recover_text_calls) == (
        native, parallel, context, recover)
    assert c.emulation == ("xml" if provider == "anthropic" else "json")


def test_local_servers_recover_calls_from_text_for_known_models_too():
    assert caps("llama3.1:8b", "ollama").recover_text_calls
    assert caps("qwen2.5:7b", "openai-compatible").recover_text_calls
    # Emulated: there is no native call to miss.
    assert not caps("qwen2.5-coder-0.5b", "openai-compatible").recover_text_calls


def test_override_by_full_model_string_and_by_bare_id():
    full = {"openai-compatible:qwen2.5-coder-0.5b": {"native_tools": True, "emulation": "xml"}}
    assert caps("qwen2.5-coder-0.5b", "openai-compatible", full).native_tools
    assert not caps("qwen2.5-coder-0.5b", "ollama", full).native_tools  # another provider: not this key
    bare = {"gpt-4o": {"native_tools": False, "context_window": 4096, "parallel_calls": False}}
    c = caps("gpt-4o", "openai", bare)
    assert (c.native_tools, c.context_window, c.parallel_calls) == (False, 4096, False)
    assert "override gpt-4o" in c.notes


def test_full_string_override_wins_over_bare_id():
    overrides = {"qwen3": {"context_window": 1000}, "ollama:qwen3": {"context_window": 2000}}
    assert caps("qwen3", "ollama", overrides).context_window == 2000


def test_override_accepts_camel_case_and_ignores_unset():
    overrides = {"qwen3": {"nativeTools": False, "contextWindow": 4096, "parallelCalls": None,
                           "emulation": None}}
    c = caps("qwen3", "ollama", overrides)
    assert (c.native_tools, c.context_window, c.emulation) == (False, 4096, "hermes")  # qwen's own format


@pytest.mark.parametrize(("override", "message"), [
    ({"nativ_tools": True}, "models.qwen3.nativ_tools: unknown capability"),
    ({"native_tools": "no"}, "models.qwen3.native_tools: expected true or false"),
    ({"emulation": "yaml"}, "models.qwen3.emulation: expected json or xml"),
    ({"context_window": 0}, "models.qwen3.context_window: expected a positive integer"),
])
def test_bad_override_names_the_key(override, message):
    with pytest.raises(CapabilityOverrideError, match=message.replace(".", r"\.")):
        caps("qwen3", "ollama", {"qwen3": override})


def test_describe_is_json_able_with_camel_case_keys():
    out = describe("qwen2.5-coder-0.5b", "openai-compatible")
    assert json.loads(json.dumps(out)) == out
    assert out["provider"] == "openai-compatible"
    assert out["parsed"]["family"] == "qwen" and out["parsed"]["version"] == "2.5"
    assert out["capabilities"]["nativeTools"] is False and out["capabilities"]["small"] is True
    assert describe("claude-3-opus")["provider"] == "anthropic"  # a bare id resolves its provider


def test_sunwell_models_shows_the_parse_and_the_capabilities(sunwell):
    run = sunwell("models", "qwen2.5-coder-0.5b", "gpt-4o")
    assert run.code == 0, run.stderr
    qwen, gpt = run.stdout.split("gpt-4o\n")
    assert "size 0.5B" in qwen and "emulated (hermes)" in qwen and "small True · temperature 0.0" in qwen
    assert "size -" in gpt and "tools native" in gpt and "temperature server default" in gpt
    as_json = json.loads(sunwell("models", "--json", "qwen2.5-coder-0.5b").stdout)
    assert as_json["capabilities"]["temperature"] == 0.0 and as_json["parsed"]["size"] == 0.5

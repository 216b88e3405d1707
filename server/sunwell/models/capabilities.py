"""What a model id means: its parsed parts, and what the model can do with tools.

`parse_model_id` reads ids as people write them (`gpt-4o`, `claude-3-5-sonnet-20241022`, `llama3.3:70b`,
`meta-llama/Llama-3.3-70B-Instruct`, `mycompany/llama3-ft`). `capabilities_for` layers the registry's rules
for the id's family (version- and size-bounded) over provider defaults, then the user's overrides (docs/config.md
"Model strings": an override always wins). Custom and fine-tuned ids parse to their base family, so they
inherit its rules.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

from sunwell.errors import SunwellError
from sunwell.model_strings import LOCAL_PROVIDERS, PROVIDERS
from sunwell.models.emulation.prompt import FAMILY_STYLES

SMALL_MAX_BILLIONS = 3.0
"""At or below this size a model gets compact prompts and the small-model discipline nudges."""

# Longest names first: the family is the longest of these that starts the model name.
_FAMILIES = sorted([
    "gpt", "claude", "llama", "codellama", "tinyllama", "qwen", "qwq", "mistral", "mixtral", "codestral",
    "ministral", "gemini", "gemma", "codegemma", "deepseek", "phi", "smollm", "command", "granite",
    "starcoder", "falcon", "vicuna", "orca",
], key=len, reverse=True)
_KNOWN_ORGS = {
    "meta-llama", "meta", "qwen", "mistralai", "google", "deepseek-ai", "microsoft", "huggingfacetb",
    "openai", "anthropic", "ibm-granite", "bigcode", "cohereforai", "tiiuae", "library",
    # Re-packagers publish quantized copies, not fine-tunes.
    "bartowski", "thebloke", "unsloth", "lmstudio-community", "mlx-community", "hf.co",
}
_FINE_TUNE_MARKERS = {"ft", "finetune", "finetuned", "fine-tuned", "lora", "sft", "dpo", "merged", "custom"}
_GENERIC_TAGS = {"instruct", "chat", "it", "base"}
_NOISE = re.compile(  # quantization, packaging, context length (32k), active parameters (a3b)
    r"latest|gguf|hf|awq|gptq|mlx|exl2|f16|fp16|bf16|fp8|int[48]|q\d.*|iq\d.*|\d+bit|\d+k|a\d+b")


@dataclass(frozen=True)
class ModelId:
    raw: str
    name: str
    """The model name without provider hint, org or tag (`Llama-3.3-70B-Instruct`)."""
    family: str
    version: tuple[int, ...] = ()
    size: float | None = None
    """Parameters in billions, when the id says (`70b`, `0.5b`, `135m`, `8x7b`)."""
    variant: str | None = None
    tags: tuple[str, ...] = ()
    """Every descriptive word of the id, in order (`coder`, `instruct`); `variant` is the most telling one."""
    provider: str | None = None
    org: str | None = None
    custom: bool = False


def parse_model_id(model_id: str) -> ModelId:
    rest, provider, custom = model_id.strip(), None, False
    if rest.startswith("ft:"):  # OpenAI fine-tunes: ft:gpt-4o-mini-2024-07-18:my-org::abc123
        rest, custom = rest[3:].split(":", 1)[0], True
    for name in PROVIDERS:
        for sep in ("/", ":"):
            if rest.lower().startswith(name + sep):
                rest, provider = rest[len(name) + 1:], name
    org = None
    if "/" in rest:
        org, rest = rest.rsplit("/", 1)
        org = org.split("/")[-1] if org.lower().startswith("hf.co/") else org
    name, _, tag = rest.partition(":")
    tokens = [t for t in re.split(r"[-\s]+", f"{name}-{tag}".lower()) if t]
    family, version, size, tags = _read_tokens(tokens)
    custom = custom or any(t in _FINE_TUNE_MARKERS for t in tokens)
    custom = custom or (org is not None and org.lower() not in _KNOWN_ORGS)
    variant = next((t for t in tags if t not in _GENERIC_TAGS), tags[0] if tags else None)
    return ModelId(raw=model_id, name=name, family=family, version=version, size=size, variant=variant,
                   tags=tuple(tags), provider=provider, org=org, custom=custom)


def _read_tokens(tokens: list[str]) -> tuple[str, tuple[int, ...], float | None, list[str]]:
    first = tokens[0] if tokens else ""
    family = next((f for f in _FAMILIES if first.startswith(f)), None)
    if family is None and re.fullmatch(r"o\d+", first):
        family = "o"  # OpenAI's reasoning series: o1, o3-mini, o4-mini
    family = family or re.match(r"[a-z]*", first).group() or first
    version: tuple[int, ...] = ()
    size: float | None = None
    tags: list[str] = []
    rest = [first[len(family):], *tokens[1:]]
    extendable = False  # `claude-3-5-sonnet`: a lone digit right after a one-part version continues it
    for i, tok in enumerate(rest):
        was_extendable, extendable = extendable, False
        if not tok:
            continue
        if m := re.fullmatch(r"(\d+)x(\d+(?:\.\d+)?)b", tok):
            size = int(m[1]) * float(m[2])
        elif m := re.fullmatch(r"(\d+(?:\.\d+)?)([bm])", tok):
            size = float(m[1]) / (1000 if m[2] == "m" else 1)
        elif was_extendable and re.fullmatch(r"\d", tok):
            version += (int(tok),)
        elif re.fullmatch(r"\d{4,}|0\d+", tok):
            continue  # a date or snapshot: 20250514, 0613, 001
        elif m := re.fullmatch(r"v?(\d+(?:\.\d+)*)([a-z]*)", tok):
            if version:
                continue
            version = tuple(int(p) for p in m[1].split("."))
            extendable = len(version) == 1 and not m[2] and i > 0
            if m[2]:
                tags.append(m[2])  # gpt-4o -> version 4, tag "o"
        elif tok in _FINE_TUNE_MARKERS or _NOISE.fullmatch(tok):
            continue
        else:
            tags.append(tok)
    return family, version, size, tags


def default_provider(model_id: str) -> str | None:
    """The provider a bare id implies (docs/config.md "Model strings"): `gpt-*`, `o1`… -> openai, `claude-*` ->
    anthropic."""
    mid = parse_model_id(model_id)
    if mid.provider:
        return mid.provider
    return {"gpt": "openai", "o": "openai", "claude": "anthropic"}.get(mid.family)


@dataclass(frozen=True)
class Capabilities:
    native_tools: bool
    """Offer tools through the API; when false, describe them in the prompt and detect calls in the text."""
    parallel_calls: bool
    tool_streaming: bool
    """Tool-call arguments arrive in pieces as they are generated (not in one chunk at the end)."""
    json_mode: bool
    reasoning: bool
    context_window: int
    emulation: Literal["json", "xml", "hermes", "llama3", "mistral", "harmony"]
    """The prompt style used when tools are emulated (always, or after a server rejects `tools`): the family's own
    trained call format where the registry knows it (Qwen `hermes`, Llama 3.1+ `llama3`, Mistral `mistral`,
    gpt-oss `harmony`; `emulation_prompt.py`), else `json`. A per-model override may set any of them."""
    small: bool
    temperature: float | None = None
    """Sent with every request; None leaves the server's default. Small models get 0: their calls are steadier and
    a turn repeats exactly."""
    recover_text_calls: bool = False
    """Native, but the model may write its call as text: run the normalizer over the text too."""
    constrained: bool = True
    """When tools are emulated, ask the server to constrain the reply to a call or an answer (models/emulation/constrained.py),
    where it takes a schema; false never asks."""
    notes: tuple[str, ...] = ()
    """Which defaults, rules and overrides produced these values, for `sunwell models`."""


def _caps(*bases: dict[str, Any], **values: Any) -> dict[str, Any]:
    return {k: v for base in bases for k, v in base.items()} | values


# For ids the registry does not know (docs/config.md "Model strings"): tools are offered natively everywhere;
# on local servers the text is also searched for calls, and a server that rejects `tools` is retried in
# emulation (by the caller).
_PROVIDER_DEFAULTS = {
    "openai": _caps(native_tools=True, parallel_calls=True, tool_streaming=True, json_mode=True,
                    context_window=128_000),
    "anthropic": _caps(native_tools=True, parallel_calls=True, tool_streaming=True, json_mode=False,
                       context_window=200_000, emulation="xml"),
    "ollama": _caps(native_tools=True, parallel_calls=False, tool_streaming=False, json_mode=True,
                    context_window=8192, recover_text_calls=True),
}
_LOCAL_DEFAULT = _caps(native_tools=True, parallel_calls=False, tool_streaming=True, json_mode=False,
                       context_window=8192, recover_text_calls=True)
_BASE = _caps(reasoning=False, emulation="json", small=False, recover_text_calls=False)


@dataclass(frozen=True)
class _Rule:
    family: str
    set: dict[str, Any]
    note: str
    min_version: tuple[int, ...] | None = None
    max_version: tuple[int, ...] | None = None
    """Inclusive, at its own precision: (2,) takes in every 2.x; (3, 0) takes in 3 and 3.0, not 3.1."""
    max_size: float | None = None
    tags: frozenset[str] = frozenset()

    def matches(self, mid: ModelId) -> bool:
        version = mid.version or _UNVERSIONED.get(mid.family, ())
        # Version- and size-bounded rules never match an id that does not say its version or size.
        if self.min_version is not None and not (version and version >= self.min_version):
            return False
        top = self.max_version
        if top is not None and not (version and version[:len(top)] <= top):
            return False
        if self.max_size is not None and not (mid.size is not None and mid.size <= self.max_size):
            return False
        return mid.family == self.family and self.tags <= set(mid.tags)


_UNVERSIONED = {"gemma": (1,), "qwen": (1,), "phi": (1,), "smollm": (1,), "deepseek": (1,)}
"""A family's first generation often carries no number: `gemma:2b` is Gemma 1."""

_HOSTED = _caps(native_tools=True, tool_streaming=True, recover_text_calls=False)
_OPEN = _caps(native_tools=True, recover_text_calls=True)
_NO_TOOLS = _caps(native_tools=False, parallel_calls=False)  # emulated: one call per reply is most reliable

# Every matching rule applies, in order: a family's base first, then narrower rules.
_RULES = [
    _Rule("gpt", _caps(_HOSTED, parallel_calls=True, json_mode=True, context_window=16_385),
          "gpt: native tools"),
    _Rule("gpt", _caps(_OPEN, parallel_calls=False, reasoning=True, context_window=131_072, emulation="harmony"),
          "gpt-oss: open weights, harmony format", tags=frozenset({"oss"})),
    _Rule("gpt", _caps(parallel_calls=False, context_window=8192), "gpt-4: 8k, no parallel calls",
          min_version=(4,), max_version=(4,)),
    _Rule("gpt", _caps(parallel_calls=True, context_window=128_000), "gpt-4 turbo: 128k", min_version=(4,),
          tags=frozenset({"turbo"})),
    _Rule("gpt", _caps(parallel_calls=True, context_window=128_000), "gpt-4o: 128k", min_version=(4,),
          tags=frozenset({"o"})),
    _Rule("gpt", _caps(parallel_calls=True, context_window=1_047_576), "gpt-4.1: 1M", min_version=(4, 1)),
    _Rule("gpt", _caps(reasoning=True, context_window=400_000), "gpt-5: reasoning, 400k", min_version=(5,)),
    _Rule("o", _caps(_HOSTED, parallel_calls=False, json_mode=True, reasoning=True, context_window=200_000),
          "o-series: reasoning"),
    _Rule("o", _caps(_NO_TOOLS, context_window=128_000), "o1-preview: no tool calling",
          tags=frozenset({"preview"})),
    _Rule("o", _caps(_NO_TOOLS, context_window=128_000), "o1-mini: no tool calling", max_version=(1,),
          tags=frozenset({"mini"})),
    _Rule("claude", _caps(_HOSTED, parallel_calls=True, json_mode=False, context_window=200_000,
                          emulation="xml"), "claude: native tools, 200k"),
    _Rule("claude", _caps(_NO_TOOLS, context_window=100_000), "claude-2: no tool calling", max_version=(2,)),
    _Rule("claude", _caps(reasoning=True), "claude >= 3.7: extended thinking", min_version=(3, 7)),
    _Rule("gemini", _caps(_HOSTED, parallel_calls=True, json_mode=True, context_window=1_048_576),
          "gemini: native tools, 1M"),
    _Rule("gemini", _caps(context_window=32_768), "gemini 1.0: 32k", max_version=(1, 0)),
    _Rule("gemini", _caps(reasoning=True), "gemini >= 2.5: thinking", min_version=(2, 5)),
    _Rule("llama", _caps(_OPEN, parallel_calls=False, context_window=131_072, emulation="llama3"),
          "llama: tools from 3.1, JSON after <|python_tag|>"),
    _Rule("llama", _caps(_NO_TOOLS, context_window=4096, emulation="json"), "llama 1-2: no tool calling",
          max_version=(2,)),
    _Rule("llama", _caps(_NO_TOOLS, context_window=8192, emulation="json"), "llama 3.0: no tool template",
          min_version=(3,), max_version=(3, 0)),
    _Rule("qwen", _caps(_OPEN, parallel_calls=True, context_window=32_768, emulation="hermes"),
          "qwen: hermes-style tools"),
    _Rule("qwen", _caps(_NO_TOOLS, emulation="json"), "qwen 1.x: no tool calling", max_version=(1, 5)),
    _Rule("qwen", _caps(_NO_TOOLS, emulation="hermes"),
          "small qwen2.5-coder: writes calls as text, emulate in its trained (hermes) format",
          max_version=(2, 5), max_size=1.5, tags=frozenset({"coder"})),
    _Rule("qwen", _caps(reasoning=True, context_window=40_960), "qwen3: thinking", min_version=(3,)),
    _Rule("qwq", _caps(_OPEN, reasoning=True, context_window=32_768, emulation="hermes"), "qwq: reasoning"),
    _Rule("mistral", _caps(_OPEN, parallel_calls=False, context_window=32_768, emulation="mistral"),
          "mistral: tools from v0.3, [TOOL_CALLS]"),
    _Rule("mistral", _caps(parallel_calls=True, context_window=131_072), "mistral-large: 128k",
          tags=frozenset({"large"})),
    _Rule("mixtral", _caps(_OPEN, parallel_calls=False, context_window=32_768, emulation="mistral"), "mixtral"),
    *(_Rule(f, _caps(_OPEN, parallel_calls=False, context_window=131_072, emulation="mistral"),
            f"{f}: mistral tools, [TOOL_CALLS]") for f in ("ministral", "codestral", "devstral", "magistral")),
    _Rule("deepseek", _caps(_OPEN, parallel_calls=False, context_window=65_536), "deepseek"),
    _Rule("deepseek", _caps(reasoning=True), "deepseek-r1: reasoning", tags=frozenset({"r1"})),
    _Rule("deepseek", _caps(reasoning=True), "deepseek-reasoner", tags=frozenset({"reasoner"})),
    _Rule("deepseek", _caps(_NO_TOOLS, context_window=16_384), "deepseek-coder v1: no tool calling",
          max_version=(1,), tags=frozenset({"coder"})),
    _Rule("gemma", _caps(_OPEN, parallel_calls=False, context_window=131_072), "gemma3: prompt-based tools"),
    _Rule("gemma", _caps(_NO_TOOLS, context_window=8192), "gemma 1-2: no tool calling", max_version=(2,)),
    _Rule("phi", _caps(_OPEN, parallel_calls=False, context_window=16_384), "phi4: tools"),
    _Rule("phi", _caps(_NO_TOOLS, context_window=2048), "phi-2: no tool calling", max_version=(2,)),
    _Rule("phi", _caps(_NO_TOOLS, context_window=4096), "phi3: no tool calling", min_version=(3,),
          max_version=(3, 5)),
    _Rule("smollm", _caps(_NO_TOOLS, small=True, context_window=8192), "smollm: too small for tool calling"),
    *(_Rule(f, _caps(_NO_TOOLS, context_window=4096), f"{f}: no tool calling")
      for f in ("codellama", "tinyllama", "codegemma", "starcoder", "falcon", "vicuna", "orca")),
]


class CapabilityOverrideError(SunwellError, ValueError):
    """A `models:` override in config that names an unknown key or has a value of the wrong type."""


_OVERRIDE_TYPES: dict[str, type] = {
    f.name: {"bool": bool, "int": int, "float | None": float}.get(str(f.type), str) for f in fields(Capabilities)
    if f.name not in ("notes",)
}


def _override_key(key: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", key).lower()  # nativeTools -> native_tools


def validate_override(where: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """The override as snake_case fields; raises `CapabilityOverrideError` naming `models.<where>.<key>`."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if value is None:
            continue  # unset in config (pydantic dumps unset optional fields as None)
        name = _override_key(key)
        kind = _OVERRIDE_TYPES.get(name)
        if kind is None:
            raise CapabilityOverrideError(
                f"models.{where}.{key}: unknown capability (known: {', '.join(sorted(_OVERRIDE_TYPES))})")
        ok = isinstance(value, kind) and not (kind is int and (isinstance(value, bool) or value <= 0))
        if name == "temperature":
            ok = isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 2
        if name == "emulation":
            ok = value in ("json", "xml", *FAMILY_STYLES)
        if not ok:
            want = {"emulation": f"json or xml (or a family's format: {', '.join(FAMILY_STYLES)})",
                    "context_window": "a positive integer",
                    "temperature": "a number from 0 to 2"}.get(
                name, "true or false")
            raise CapabilityOverrideError(f"models.{where}.{key}: expected {want}, got {value!r}")
        out[name] = value
    return out


def capabilities_for(model_id: str, provider: str, overrides: Mapping[str, Mapping[str, Any]] = {},
                     learned: Mapping[str, Any] = {}) -> Capabilities:
    """`learned`: what earlier sessions learned of this model on this server (models/model_facts.py), over the
    registry's rules and under the user's overrides."""
    mid = parse_model_id(model_id)
    values: dict[str, Any] = _caps(_BASE, **_PROVIDER_DEFAULTS.get(provider, _LOCAL_DEFAULT))
    notes = [f"defaults for {provider}"]
    for rule in _RULES:
        if rule.matches(mid):
            values.update(rule.set)
            notes.append(rule.note)
    if provider in LOCAL_PROVIDERS:
        values["recover_text_calls"] = True  # local servers often return the call as text (models/README.md)
        values["tool_streaming"] = values["tool_streaming"] and provider != "ollama"
        values["json_mode"] = values["json_mode"] or provider == "ollama"
    if mid.size is not None and mid.size <= SMALL_MAX_BILLIONS:
        values["small"] = True
    if values["small"]:
        values["temperature"] = 0.0
    if mid.custom:
        notes.append(f"custom model: inherits {mid.family}")
    if learned:
        values.update(learned)
        notes.append("learned: " + ", ".join(f"{k}={v}" for k, v in learned.items()))
    for key in (model_id, f"{provider}:{model_id}"):  # the full model string is the more specific
        if key in overrides:
            values.update(validate_override(key, overrides[key]))
            notes.append(f"override {key}")
    values["recover_text_calls"] = values["recover_text_calls"] and values["native_tools"]
    return Capabilities(**values, notes=tuple(notes))


def describe(model_id: str, provider: str | None = None,
             overrides: Mapping[str, Mapping[str, Any]] = {}) -> dict[str, Any]:
    """`sunwell models` / `sunwell/models`: the parsed id and its capabilities, JSON-able, camelCase keys."""
    provider = provider or default_provider(model_id) or "openai-compatible"
    mid = parse_model_id(model_id)
    caps = capabilities_for(model_id, provider, overrides)
    parsed = asdict(mid)
    parsed["version"] = ".".join(map(str, mid.version)) or None
    parsed["providerHint"] = parsed.pop("provider")
    return {"id": model_id, "provider": provider, "parsed": _camel(parsed),
            "capabilities": _camel(asdict(caps))}


def _camel(d: dict[str, Any]) -> dict[str, Any]:
    return {re.sub(r"_([a-z])", lambda m: m[1].upper(), k): list(v) if isinstance(v, tuple) else v
            for k, v in d.items()}


__all__ = [
    "SMALL_MAX_BILLIONS",
    "Capabilities",
    "CapabilityOverrideError",
    "ModelId",
    "capabilities_for",
    "default_provider",
    "describe",
    "parse_model_id",
    "validate_override",
]

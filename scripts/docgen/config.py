"""docs/config.md: every config key, from the settings model (sunwell.config.settings), where the settings come
from (sunwell.config.loading), what a workspace may set (sunwell.config.narrowing), which variables name a
provider's endpoint and key, and VS Code's settings (package.json)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from docgen.markdown import BANNER, Models, own_doc, table
from sunwell.config import loading, narrowing, settings
from sunwell.model_strings import PROVIDERS

PACKAGE = Path(__file__).resolve().parents[2] / "package.json"

INTRO = """\
# Configuration

Settings are read, each source over the one before: the defaults below, the user config
`$XDG_CONFIG_HOME/sunwell/config.yaml` (`~/.config/sunwell/config.yaml`), the workspace config
`<workspace>/.sunwell/config.yaml`, the environment, then the command line's flags (or, in VS Code, the
`initializationOptions` and later `workspace/didChangeConfiguration` of [sidecar.md](sidecar.md), with the same keys
in camelCase). Every source is checked as it is added: a wrong key or value stops with one line naming the key and
the file (exit code 2). Project instructions (`<workspace>/AGENTS.md`, then `<workspace>/.sunwell/instructions.md`)
are read into the system prompt each turn: they are instructions to the model, never configuration.
"""

WORKSPACE = """\
## What a workspace config may set

The workspace config is written by whoever wrote the repository, or by a command the model ran, so it may only
narrow what the user set: lower the trust and the limits, add blocked paths and denied hosts, turn a dry run on,
propose MCP servers and hooks (which run only once the user approved that exact command). What it may not set is
ignored, and named in a `workspace_config_ignored` notice ([codes.md](codes.md)).

- Never from a workspace: {never}.
- Lowered, never raised: {ceilings}, and every key of {groups}.
- `network`: only `deny` grows, and the caps are lowered.
"""

MODEL_STRINGS = """\
## Model strings

A model is named `PROVIDER:MODEL`: `openai:gpt-4o`, `anthropic:claude-sonnet-4-5`, `ollama:qwen2.5:7b`,
`openai-compatible:qwen2.5-coder-0.5b`. The providers are {providers}. A bare id whose provider is plain is taken
as it is (`gpt-*`, `o1`, `o3`, `o4` for openai; `claude-*` for anthropic). A key only ever goes to its own
provider's endpoint; each provider reads these variables (the SDKs' own names for openai and anthropic; an
`openai-compatible` server never gets `OPENAI_API_KEY`):

{variables}
How a model calls tools (natively, or taught a format in the prompt) comes from its id, and `models:` below
overrides it per model string or bare id. On `ollama` and `openai-compatible`, a server that refuses native tools
is asked again in emulation, once, and that is remembered for the session.
"""

PLACES = """\
## Files and places

| what | where |
|---|---|
| user config | `$XDG_CONFIG_HOME/sunwell/config.yaml` (`~/.config/sunwell/config.yaml`) |
| workspace config | `<workspace>/.sunwell/config.yaml` |
| data: sessions, audit log, checkpoints | `data_dir`, else `SUNWELL_DATA_DIR`, else `$XDG_DATA_HOME/sunwell` (VS Code passes its workspace storage) |
| audit log | `<data>/audit/tools-YYYY-MM-DD.jsonl`: one line per tool call, secrets masked |
| lens files | `**/*.lens` in the workspace, and `<user config folder>/lenses/` |
"""


def _models_of(annotation: object) -> list[type[BaseModel]]:
    found = []
    for arg in (getattr(annotation, "__args__", None) or ()):
        found += _models_of(arg)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        found.append(annotation)
    return found


def _titles(model: type[BaseModel], prefix: str, titles: dict[type, str]) -> None:
    """Each group of settings titled by the path that reaches it: `network`, `mcp_servers.<name>.oauth`, and
    `hooks.<key>[]` for one that several keys of a group hold."""
    reached: dict[type, list[str]] = {}
    for name, info in model.model_fields.items():
        origin = getattr(info.annotation, "__origin__", None)
        for nested in _models_of(info.annotation):
            reached.setdefault(nested, []).append(
                (name, ".<name>" if origin is dict else "[]" if origin is list else ""))
    for nested, paths in reached.items():
        if nested not in titles:
            name, tail = paths[0] if len(paths) == 1 else ("<key>", paths[0][1])
            titles[nested] = prefix + name + tail
            _titles(nested, titles[nested] + ".", titles)


def _vscode() -> str:
    properties = json.loads(PACKAGE.read_text(encoding="utf-8"))["contributes"]["configuration"]["properties"]
    rows = [[f"`{key}`", str(entry.get("type", "")), json.dumps(entry.get("default")),
             entry.get("markdownDescription") or entry.get("description", "")] for key, entry in properties.items()]
    return ("## VS Code settings\n\nThe extension passes these to the sidecar (machine-scoped ones only from the user's "
            "own settings):\n\n" + table(["setting", "type", "default", "meaning"], rows))


def page() -> str:
    models = Models()
    titles: dict[type, str] = {}
    _titles(settings.Settings, "", titles)
    models.titles.update(titles)
    keys = models.fields(settings.Settings, wire=False, defaults=True)
    groups = models.rest(wire=False, defaults=True)
    environment = table(["variable", "sets"], [[f"`{var}`", f"`{key}`"] for var, key in loading.ENV_VARS.items()])
    variables = table(["provider", "variables"], [[f"`{provider}`", ", ".join(
        f"`{var}`" for var in narrowing.PROVIDER_VARIABLES.get(provider, ()))] for provider in PROVIDERS])
    parts = [BANNER, INTRO, "\n## Keys\n\n", own_doc(settings.Settings), keys, "\n", groups,
             "\n## Environment\n\nThese variables set a key (over the config files, under the flags):\n\n",
             environment, "\n", WORKSPACE.format(never=", ".join(f"`{k}`" for k in sorted(narrowing.WORKSPACE_MAY_NOT_SET)),
                                                 ceilings=", ".join(f"`{k}`" for k in narrowing.CEILINGS),
                                                 groups=", ".join(f"`{k}`" for k in narrowing.LIMIT_GROUPS)),
             "\n", MODEL_STRINGS.format(providers=", ".join(f"`{p}`" for p in PROVIDERS), variables=variables),
             "\n", PLACES, "\n", _vscode()]
    return "".join(parts).rstrip() + "\n"


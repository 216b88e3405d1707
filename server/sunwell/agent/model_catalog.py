"""The models a front end shows (`sunwell models`, `sunwell/models`), each resolved the way a turn resolves it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from sunwell.agent.windows import configured_window
from sunwell.model_strings import LOCAL_PROVIDERS, ModelSpec, parse_model_string
from sunwell.models.capabilities import describe

if TYPE_CHECKING:
    from sunwell.agent.engine import Engine


def model_catalog(engine: Engine, names: Sequence[str] | None = None, *, ask_servers: bool = False) -> ModelCatalog:
    """`names` in their order (one entry each), else the configured model and every model with a capability
    override (`models:` in the config), each once. A string that is no valid model string still gets its
    capabilities, under the provider its id implies; only the configured model is then left out, as no turn could
    run it. The window is a turn's but for what a session learned; with `ask_servers` a server on this machine or
    network is asked for it (briefly), else only what a turn already heard is used."""
    settings = engine.settings
    overrides = {key: value.model_dump(exclude_none=True) for key, value in settings.models.items()}
    if names is None:
        wanted = [(settings.model or "", "configured"), *((key, "override") for key in settings.models)]
    else:
        wanted = [(name, "named") for name in names]
    current, models = None, {}
    for index, (name, source) in enumerate(wanted):
        try:
            spec = parse_model_string(name)
            provider, model = spec.provider, spec.model
        except ValueError:
            if names is None and (source == "configured" or not name):
                continue
            provider, model = None, name  # `describe` takes the provider the id implies
        info = describe(model, provider, overrides)
        caps = info["capabilities"]
        window, window_source = _window(engine, ModelSpec(info["provider"], model), caps["contextWindow"],
                                        ask_servers)
        caps = caps | {"contextWindow": window, "notes": [*caps["notes"], f"context window: {window_source}"]}
        entry = CatalogModel(id=f"{info['provider']}:{model}", name=name, model=model, provider=info["provider"],
                             parsed=info["parsed"], capabilities=caps, source=source, window=window,
                             window_source=window_source)
        if source == "configured":
            current = entry.id
        models.setdefault(entry.id if names is None else index, entry)  # a model listed twice is shown once
    return ModelCatalog(current=current, models=list(models.values()))


def _window(engine: Engine, spec: ModelSpec, registry: int, ask_servers: bool) -> tuple[int, str]:
    if (size := configured_window(engine.settings.models, spec)) is not None:
        return size, "config"
    if spec.provider in LOCAL_PROVIDERS:
        endpoint = engine.models.endpoint(spec, made_only=not ask_servers)
        said = engine.models.windows.ask_now(spec, endpoint) if ask_servers else engine.models.windows.known(spec, endpoint)
        if said:
            return said
    return registry, "registry"


@dataclass(frozen=True)
class CatalogModel:
    """One model of `model_catalog`; `parsed` and `capabilities` are JSON-able, with camelCase keys."""

    id: str
    """`PROVIDER:MODEL`, as `--model` and `sunwell/chat` take it."""
    name: str
    """The string as it was written (a `--model`/argument, the `model` setting, a `models:` key)."""
    model: str
    """The id the provider is sent."""
    provider: str
    parsed: dict[str, Any]
    """What the id says: family, version, size, variant, tags (`parse_model_id`)."""
    capabilities: dict[str, Any]
    """How this model calls tools; `notes` names the defaults, rules and overrides that made each value."""
    source: Literal["configured", "override", "named"]
    """Where it came from: the `model` setting, a `models:` override, or the caller's `names`."""
    window: int
    """The context window a turn budgets against (also `capabilities["contextWindow"]`)."""
    window_source: str
    """Where the window came from: "config", "server (…)" or "registry" (agent/windows.py)."""


@dataclass(frozen=True)
class ModelCatalog:
    current: str | None
    """The configured model's id; None when there is none, or it is no valid model string."""
    models: list[CatalogModel]


"""`sunwell/tools`, `sunwell/models`, `sunwell/commands`: what the client may offer the user right now."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcInvalidParams

from sunwell.lsp.protocol import (
    COMMANDS,
    MODELS,
    TOOLS,
    CommandInfo,
    CommandsResult,
    EmptyParams,
    ModelInfo,
    ModelsResult,
    ToolInfo,
    ToolsParams,
    ToolsResult,
)

if TYPE_CHECKING:
    from sunwell.config import Settings
    from sunwell.lsp.server import SunwellServer


def setup(server: SunwellServer) -> None:
    @server.feature(TOOLS)
    def tools(ls: SunwellServer, params: Any) -> dict[str, Any]:
        from sunwell.agent.engine import SetupError
        from sunwell.lsp.sessions import _engine
        from sunwell.tools.base import Trust

        request = ls.parse(ToolsParams, params, TOOLS)
        engine = _engine(ls)
        try:
            lens = engine.lens(request.lens) if request.lens else None
        except SetupError as exc:
            raise JsonRpcInvalidParams(f"{TOOLS}: {exc}") from None
        offered, _, _ = engine.tools(Trust[request.trust or engine.settings.trust], None, lens)
        return ToolsResult(tools=[ToolInfo(name=tool.name, description=tool.description, source=tool.source,
                                           policy=tool.approval, min_trust=tool.min_trust.name)
                                  for tool in offered]).wire()

    @server.feature(MODELS)
    def models(ls: SunwellServer, params: Any) -> dict[str, Any]:
        from sunwell.lsp.sessions import _engine

        ls.parse(EmptyParams, params, MODELS)
        return model_catalog(_engine(ls).settings).wire()

    @server.feature(COMMANDS)
    def commands(ls: SunwellServer, params: Any) -> dict[str, Any]:
        from sunwell.agent.commands import commands_catalog

        ls.parse(EmptyParams, params, COMMANDS)
        return CommandsResult(commands=[CommandInfo(name=c.name, usage=c.usage, description=c.description)
                                        for c in commands_catalog()]).wire()


def model_catalog(settings: Settings) -> ModelsResult:
    """The configured model and every model with a capability override, each with its capabilities."""
    from sunwell.models.capabilities import default_provider, describe
    from sunwell.models.spec import parse_model_string

    overrides = {key: override.model_dump() for key, override in settings.models.items()}
    seen: dict[str, ModelInfo] = {}
    current = None
    for index, text in enumerate([settings.model or "", *settings.models]):
        try:
            spec = parse_model_string(text)
            provider, model = spec.provider, spec.model
        except ValueError:
            if index == 0 or not text:
                continue  # no (valid) model configured: `current` stays null
            provider, model = default_provider(text) or "openai-compatible", text
        model_string = f"{provider}:{model}"
        if index == 0:
            current = model_string
        if model_string not in seen:
            capabilities = describe(model, provider, overrides)["capabilities"]
            seen[model_string] = ModelInfo(id=model_string, provider=provider, capabilities=capabilities)
    return ModelsResult(current=current, models=list(seen.values()))

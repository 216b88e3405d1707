"""`sunwell/tools`, `sunwell/models`, `sunwell/commands`: what the client may offer the user right now.

Its imports of the engine floor (agent/, tools/, config/) are in the handlers: the sidecar answers `initialize`
before it loads the engine (lsp/server.py).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcInvalidParams

from sunwell.errors import SetupError
from sunwell.lsp.failures import Unavailable
from sunwell.lsp.sessions import engine_or_fail
from sunwell.vocabulary import Trust
from sunwell.wire.protocol import (
    COMMANDS,
    MODELS,
    TOOLS,
    CommandInfo,
    CommandsResult,
    EmptyParams,
    ModelInfo,
    ModelsResult,
    ResourceInfo,
    ToolInfo,
    ToolsParams,
    ToolsResult,
)

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from sunwell.agent.engine import Engine
    from sunwell.lsp.server import SunwellServer


def setup(server: SunwellServer) -> None:
    @server.feature(TOOLS)
    async def tools(ls: SunwellServer, params: Any) -> dict[str, Any]:
        request = ls.parse(ToolsParams, params, TOOLS)
        engine = engine_or_fail(ls)
        try:
            lens = engine.lens(request.lens) if request.lens else None
        except SetupError as exc:
            raise JsonRpcInvalidParams(f"{TOOLS}: invalid params: 'lens': {exc}") from None
        trust = Trust[request.trust or engine.settings.trust]
        level = engine.grant(trust, None, lens)[0]
        # MCP servers list their tools once started: the ones this trust allows start now (none is asked about)
        await engine.servers.start(level, lambda _level, _code, message: log.info("%s", message))
        offered, _, _ = engine.tools(trust, None, lens)
        return ToolsResult(tools=[ToolInfo(name=tool.name, description=tool.description, source=tool.source,
                                           policy=tool.approval, min_trust=tool.min_trust.name)
                                  for tool in offered]).wire()

    @server.feature(MODELS)
    def models(ls: SunwellServer, params: Any) -> dict[str, Any]:
        ls.parse(EmptyParams, params, MODELS)
        return model_catalog(engine_or_fail(ls)).wire()

    @server.feature(COMMANDS)
    async def commands(ls: SunwellServer, params: Any) -> dict[str, Any]:
        from sunwell.agent.commands import commands_catalog

        ls.parse(EmptyParams, params, COMMANDS)
        try:
            engine = ls.engine
        except Unavailable:  # no workspace or a broken setting: the built-in commands still complete
            engine = None
        if engine is not None and engine.servers.names():  # their prompts are commands: those that may start, start
            await engine.servers.start(Trust[engine.settings.trust], lambda _l, _c, message: log.info("%s", message))
        resources = [ResourceInfo(server=r.server, uri=r.uri, name=r.name, description=r.description,
                                  mime_type=r.mime_type) for r in (engine.servers.resources() if engine else ())]
        return CommandsResult(commands=[CommandInfo(name=c.name, usage=c.usage, description=c.description)
                                        for c in commands_catalog(engine=engine)], resources=resources).wire()


def model_catalog(engine: Engine) -> ModelsResult:
    """The configured model and every model with a capability override, each with its capabilities."""
    from sunwell.agent.model_catalog import model_catalog as catalog_of

    catalog = catalog_of(engine)
    return ModelsResult(current=catalog.current, models=[
        ModelInfo(id=model.id, provider=model.provider, capabilities=model.capabilities) for model in catalog.models])

"""`sunwell/learnedApis` and `sunwell/learnedForget`: the learned APIs as `sunwell tools list` shows them, and the
user's Forget of one (VS Code's "Sunwell: Learned APIs"). Credentials never travel here: VS Code keeps them in its
secret storage and hands them to the sidecar in its environment (tools/learned/credentials.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sunwell.lsp.sessions import engine_or_fail
from sunwell.wire.protocol import (
    LEARNED_APIS,
    LEARNED_FORGET,
    EmptyParams,
    LearnedApiInfo,
    LearnedApisResult,
    LearnedForgetParams,
    LearnedForgetResult,
)

if TYPE_CHECKING:
    from sunwell.lsp.server import SunwellServer


def setup(server: SunwellServer) -> None:
    @server.feature(LEARNED_APIS)
    def apis(ls: SunwellServer, params: Any) -> dict[str, Any]:
        ls.parse(EmptyParams, params, LEARNED_APIS)
        found = engine_or_fail(ls).apis.apis()
        return LearnedApisResult(apis=[LearnedApiInfo(
            name=api.name, title=api.title, source=api.source, hosts=api.hosts,
            tools=[op.tool for op in api.offered()], schemes=[scheme.name for scheme in api.schemes],
            operations=len(api.operations)) for api in found]).wire()

    @server.feature(LEARNED_FORGET)
    def forget(ls: SunwellServer, params: Any) -> dict[str, Any]:
        request = ls.parse(LearnedForgetParams, params, LEARNED_FORGET)
        forgotten = engine_or_fail(ls).apis.forget(request.name)  # and its entry in the user config
        return LearnedForgetResult(forgotten=forgotten).wire()

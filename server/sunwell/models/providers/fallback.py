"""Native tool calling first; a server that refuses `tools` gets the same request again in emulation.

On `ollama` and `openai-compatible`, a server that rejects `tools` (e.g. "does not support tools") is retried once
in emulation mode, and that is remembered for the session (`on_fallback`; docs/config.md "Model strings").
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from sunwell.models.base import ModelRequest, Notice, Provider, ProviderError, StreamEvent
from sunwell.models.emulation.provider import rejects_tools


class ToolFallbackProvider:
    def __init__(self, native: Provider, emulated: Provider, on_fallback: Callable[[], None] = lambda: None):
        self.native, self.emulated, self.on_fallback = native, emulated, on_fallback
        self.name = native.name
        self.emulating = False

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if not self.emulating:
            started = False
            try:
                async for event in self.native.stream(request):
                    started = True
                    yield event
                return
            except ProviderError as exc:
                if started or not request.tools or not rejects_tools(exc):
                    raise
                self.emulating = True
                self.on_fallback()
                yield Notice(code="emulation_fallback", level="warning",
                             message=f"the server refused native tool calls ({exc}); using emulated tool calls")
        async for event in self.emulated.stream(request):
            yield event

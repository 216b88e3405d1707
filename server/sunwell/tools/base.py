"""The shape of a tool and of its failures."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from sunwell.messages import ToolError, ToolSpec
from sunwell.vocabulary import Trust

__all__ = ["Tool", "ToolContext", "ToolFailure", "Trust"]


class ToolFailure(Exception):
    """Raised by a handler; becomes an error result the model reads (never an exception through the loop)."""

    def __init__(self, code: str, message: str, suggestion: str | None = None) -> None:
        super().__init__(message)
        self.error = ToolError(code=code, message=message, suggestion=suggestion)


@dataclass
class ToolContext:
    """What a handler may use: the jail (the only way to a path) and the limits of this session."""

    jail: Any  # sunwell.tools.jail.Jail (kept loose to avoid an import cycle in handlers' typing)
    max_output_bytes: int = 100_000
    ripgrep_path: str | None = None
    env_passthrough: tuple[str, ...] = ()
    """Variables of Sunwell's environment commands may see besides the base allowlist (tools/environment.py)."""
    quarantine_dir: Any = None
    """Where what a command planted under a blocked or protected name is moved (a Path), else the temp dir."""
    secrets: Any = None
    """A sunwell.tools.environment.EnvSecrets masking results before the model or a log sees them, or None."""
    extra: dict[str, Any] = field(default_factory=dict)


Handler = Callable[[dict[str, Any], ToolContext], Awaitable[str]]
Preview = Callable[[dict[str, Any], ToolContext], dict[str, Any]]
"""What an approval shows before a risky call runs: PROTOCOL.md `preview` (`diff` or `command`)."""


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    handler: Handler
    min_trust: Trust = Trust.read_only
    approval: Literal["auto", "ask"] = "auto"
    risk: Literal["write", "shell", "network"] | None = None
    read_only: bool = True
    """Read-only calls of one response may run concurrently; the others run in order."""
    source: str = "core"
    timeout: float = 60.0
    preview: Preview | None = None

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

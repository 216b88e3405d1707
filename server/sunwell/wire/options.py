"""The sidecar's options (docs/sidecar.md "initializationOptions"): what a client passes when it starts the sidecar,
and again in the `sunwell` section of `workspace/didChangeConfiguration`; with the base of every params model."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from sunwell.vocabulary import ApprovalMode, DryRun, TrustName
from sunwell.wire.messages import WireModel

NAME_LIMIT, PATH_LIMIT = 256, 4096
"""The longest id or name a request may give (a session, a turn, a model, a server) and the longest path (Linux's):
refused longer at the door, with the key named (a 60 MB name would travel on into every message about it)."""
Name = Annotated[str, Field(max_length=NAME_LIMIT)]
PathText = Annotated[str, Field(max_length=PATH_LIMIT)]


class Params(WireModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)


class StagingOptions(Params):
    """What one command may change before its staged changes are refused (docs/config.md "staging")."""

    max_bytes: int | None = Field(None, ge=0)
    max_files: int | None = Field(None, ge=0)


class NetworkOptions(Params):
    """`network` from the client (VS Code's `sunwell.network.*`, machine scope): hosts added to the config's."""

    allow: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)


class WebSearchOptions(Params):
    """`webSearch` from the client: the search service, in place of the config's `web_search`."""

    provider: Literal["searxng", "brave", "tavily"]
    base_url: str | None = None
    api_key_env: str | None = None
    """The variable the client put the key in (VS Code: from its secret storage)."""


class ClientCapabilities(Params):
    """What the client answers besides `sunwell/approve` (docs/sidecar.md "Server -> client requests")."""

    ask: bool = False
    """It answers `sunwell/ask`: `ask_user` questions reach a person."""
    code_intel: bool = False
    """It answers `sunwell/codeIntel`: the code intelligence tools are offered."""
    elicit: bool = False
    """It answers `sunwell/elicit` (an MCP server asking the user)."""
    secrets: bool = False
    """It answers `sunwell/secret`: MCP servers' OAuth sign-ins are kept in its secret storage, not the keyring."""


class InitializationOptions(Params):
    """`initializationOptions`, and the `sunwell` section of `workspace/didChangeConfiguration`. All optional."""

    data_dir: Path | None = None
    """Sessions, audit log and checkpoints (VS Code passes its workspace storage); wins over SUNWELL_DATA_DIR."""
    model: str | None = None
    trust: TrustName | None = None
    approval: ApprovalMode | None = None
    """`ask` (the default) sends `sunwell/approve` to the client; `auto` and `deny` answer without asking."""
    max_tool_turns: int | None = None
    dry_run: DryRun | None = None
    """true: no tool call runs; "risky": only the read-only ones (docs/cli.md "sunwell run")."""
    base_url: str | None = None
    approval_timeout_sec: float | None = None
    ripgrep_path: str | None = None
    compact_at: float | None = None
    """Compact when the next request would pass this fraction of the context window (0 < x <= 1)."""
    compaction_model: str | None = None
    """A model string used to summarise older history; default: the session's model."""
    mcp_servers: dict[str, dict[str, Any]] | None = None
    """MCP servers as in the user config (docs/config.md), from the client's user-level settings."""
    prices: dict[str, dict[str, float]] | None = None
    """Per million tokens, `{"openai:gpt-4o": {input: 2.5, output: 10}}`, on top of the defaults (docs/config.md)."""
    staging: StagingOptions | None = None
    network: NetworkOptions | None = None
    """Hosts added to the config's `network.allow` / `network.deny` (VS Code: machine-scoped user settings)."""
    web_search: WebSearchOptions | None = None
    """The search service, in place of the config's `web_search`."""
    client_capabilities: ClientCapabilities | None = None
    """What the client answers; absent: only `sunwell/approve`."""

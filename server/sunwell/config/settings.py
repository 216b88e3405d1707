"""The settings model: every key of the user and workspace config, typed, with its default (docs/config.md;
README "Sessions and configuration"). Validated once, where it is loaded (config/loading.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from sunwell.vocabulary import ApprovalMode, DryRun, TrustName


class ModelOverride(BaseModel):
    """Per-model capability overrides, keyed by the full model string or the bare model id."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    native_tools: bool | None = Field(None, alias="nativeTools")
    emulation: Literal["json", "xml", "hermes", "llama3", "mistral", "harmony"] | None = None
    """How tools are taught to a model without native calls: json or xml, or a family's own format."""
    context_window: int | None = Field(None, alias="contextWindow", gt=0)
    parallel_calls: bool | None = Field(None, alias="parallelCalls")
    temperature: float | None = Field(None, ge=0, le=2)
    vision: bool | None = None
    """The model sees images (sent to it as images); unset: the registry's word for its family
    (models/capabilities.py). A workspace may only turn it off."""
    constrained: bool | None = None
    """Constrained decoding for emulated tool calls (models/emulation/constrained.py); on by default, a workspace may only
    turn it off."""


class RateLimits(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tool_calls_per_min: int = 30
    writes_per_min: int = 10
    shell_per_min: int = 5
    bytes_written: int = 10_000_000


class Staging(BaseModel):
    """What one command may change in its staging overlay before its changes are refused (tools/sandbox/effects.py)."""

    model_config = ConfigDict(extra="forbid")
    max_bytes: int = Field(500_000_000, ge=0)
    max_files: int = Field(20_000, ge=0)


class Background(BaseModel):
    """Background processes: run_command's `background` (tools/processes/, README "Background processes")."""

    model_config = ConfigDict(extra="forbid")
    max_processes: int = Field(4, ge=0, le=64)
    """How many of a session's background processes may run at once; 0 turns background processes off."""
    output_ring_bytes: int = Field(1_000_000, ge=4096, le=100_000_000)
    """The newest output kept per process; what is older is dropped (and counted)."""
    stop_at_session_end: bool = True
    """A session's processes stop when it ends (`::clear`, a `sunwell run` over); Sunwell stops them all on exit."""
    writable: list[str] = Field(default_factory=list)
    """Workspace folders background processes may write (build caches: `.next`, `dist`); the rest is read-only."""


class McpSandbox(BaseModel):
    """What a sandboxed stdio MCP server may do besides reading the system and the workspace."""

    model_config = ConfigDict(extra="forbid")
    write: bool = False
    """The workspace writable (else read-only)."""
    network: bool = False


class McpOAuth(BaseModel):
    """How Sunwell signs in to a streamable HTTP server that answers 401 (tools/mcp/oauth.py): discovery, dynamic
    client registration, the authorization code with PKCE in the browser; tokens in secret storage, never here."""

    model_config = ConfigDict(extra="forbid")
    timeout: float = Field(300, gt=0, le=3600)
    """Seconds to wait for the sign-in in the browser before giving up."""


class McpServerConfig(BaseModel):
    """One MCP server (docs/config.md "mcp_servers.<name>"): a `command` run over stdio, or a streamable HTTP `url`."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @field_validator("sandbox", mode="before")
    @classmethod
    def _yaml_off(cls, value: Any) -> Any:
        return "off" if value is False else value

    @field_validator("oauth", mode="before")
    @classmethod
    def _oauth_off(cls, value: Any) -> Any:
        return "off" if value is False else value

    command: str | None = Field(None, min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    """Variables the server gets on top of the allowlisted environment commands get."""
    cwd: str | None = None
    """Where the server runs, relative to the workspace (default: the workspace)."""
    url: str | None = Field(None, pattern=r"^https?://")
    headers: dict[str, str] = Field(default_factory=dict)
    oauth: McpOAuth | Literal["off"] = Field(default_factory=McpOAuth)
    """A url server that answers 401 is signed in to with OAuth; `off` leaves it failing (a header of your own)."""
    trust: TrustName | None = None
    """The trust level its tools need; default `shell` for a command, `full` for a url."""
    approval: Literal["ask", "auto"] = "ask"
    tools: list[str] | None = None
    """Allowlist of the server's tool names; None offers all."""
    disabled_tools: list[str] = Field(default_factory=list, alias="disabledTools")
    timeout: float = Field(60, gt=0, le=3600)
    """Seconds one request (a start, a listing, a call) may take."""
    sandbox: McpSandbox | Literal["off"] = Field(default_factory=McpSandbox)
    """A command runs in bubblewrap like run_command; `off` runs it as you (user config only)."""

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either `command` (a stdio server) or `url` (a streamable HTTP server)")
        if self.command is not None and "oauth" in self.model_fields_set:
            raise ValueError("`oauth` is for a streamable HTTP server (`url`); a stdio server gets its secrets in `env`")
        return self

    @property
    def needs(self) -> TrustName:
        return self.trust or ("shell" if self.command else "full")

    @property
    def sign_in_timeout(self) -> float:
        """Seconds a start may wait for the user's OAuth sign-in in the browser (0: it never does)."""
        return self.oauth.timeout if self.url is not None and self.oauth != "off" else 0


class NetworkSettings(BaseModel):
    """Which web hosts network tools reach without asking or never (tools/network/), and how much they read."""

    model_config = ConfigDict(extra="forbid")
    allow: list[str] = Field(default_factory=list)
    """Fetched without asking: names (`docs.python.org`), `*.name` for its sub-domains, IP literals. A private or
    loopback address is reached only when its exact name or address is here (never through a wildcard)."""
    deny: list[str] = Field(default_factory=list)
    """Never fetched; a workspace config may add here."""
    max_bytes: int = Field(5_000_000, ge=1_000)
    """A response larger than this is refused (what is downloaded)."""
    timeout: float = Field(30, gt=0, le=600)
    """Seconds for the whole fetch, redirects included."""


class WebSearchSettings(BaseModel):
    """The search service behind `web_search` (tools/network/search.py); `web_search` is offered only when set."""

    model_config = ConfigDict(extra="forbid")
    provider: Literal["searxng", "brave", "tavily"] = "searxng"
    base_url: str | None = Field(None, pattern=r"^https?://")
    """Default: the provider's public endpoint; required for SearXNG, which has none."""
    api_key_env: str | None = None
    """The environment variable holding the key (Brave, Tavily); never the key itself."""

    @model_validator(mode="after")
    def _searxng_needs_url(self) -> WebSearchSettings:
        if self.provider == "searxng" and not self.base_url:
            raise ValueError("web_search.provider searxng needs base_url (your SearXNG instance)")
        return self


class LearnedApiConfig(BaseModel):
    """A learned API (tools/learned/): where its document came from and how often it may be called; written by
    `sunwell tools learn`, its tools kept in the data dir, its credentials in secret storage, never here."""

    model_config = ConfigDict(extra="forbid")
    source: str
    rate_per_min: int = Field(30, ge=1, le=10_000)


class HookConfig(BaseModel):
    """One hook (README "Hooks"): a program run with the call as JSON on stdin, never through a shell."""

    model_config = ConfigDict(extra="forbid")
    match: str = "*"
    """A glob on the tool's name (`run_command`, `github__*`); pre_tool and post_tool only."""
    command: list[str] = Field(min_length=1)
    """The argv: the program and its arguments, each one word (no shell reads it)."""
    timeout: float = Field(30, gt=0, le=600)
    """Seconds before the hook is stopped (its whole process group); a hook that times out is a warning."""

    @field_validator("command")
    @classmethod
    def _program(cls, argv: list[str]) -> list[str]:
        if not argv[0].strip():
            raise ValueError("the program (the first word) is empty")
        return argv


class HooksSettings(BaseModel):
    """The hooks of each point a turn passes (docs/config.md "hooks")."""

    model_config = ConfigDict(extra="forbid")
    pre_tool: list[HookConfig] = Field(default_factory=list)
    """Before policy: exit 0 goes on, exit 2 denies (stderr is the reason), anything else is a warning."""
    post_tool: list[HookConfig] = Field(default_factory=list)
    """After the call: what it prints is appended to the result as a note."""
    turn_end: list[HookConfig] = Field(default_factory=list)
    session_start: list[HookConfig] = Field(default_factory=list)


class SubagentSettings(BaseModel):
    """`task`'s read-only sub-agents (agent/subagent.py)."""

    model_config = ConfigDict(extra="forbid")
    max_tool_turns: int = Field(20, ge=1, le=200)
    """Bound on one sub-agent's model round trips with tools; then it answers with what it found."""


class ImageSettings(BaseModel):
    """How images are sent to a model (tools/images.py): each is re-encoded without its metadata and cut to these
    bounds. A workspace config may only lower them."""

    model_config = ConfigDict(extra="forbid")
    max_bytes: int = Field(5_000_000, ge=10_000)
    """The most bytes one image may take once encoded (Anthropic takes at most 5 MB): a larger one is made smaller."""
    max_side: int = Field(1568, ge=64, le=8000)
    """Its longest side in pixels: a larger one is scaled down (1568 is what Anthropic scales to itself)."""
    per_message: int = Field(8, ge=0, le=100)
    """The most images one message may carry; the rest are left out, and the user is told."""


class WorktreeSettings(BaseModel):
    """Sessions in their own git worktree (`sunwell run --worktree`, README "Worktree sessions"). A workspace config
    may only lower `max_running` and shorten `copy_untracked`; `folder` is the user's alone."""

    model_config = ConfigDict(extra="forbid")
    folder: Path | None = None
    """Where the checkouts go (`FOLDER/REPO-ID/NAME`); unset: under the data dir, `worktrees/REPO-ID/NAME`."""
    max_running: int = Field(3, ge=1, le=32)
    """How many worktree sessions may run a turn at once; one more is refused with a message."""
    copy_untracked: list[str] = Field(default_factory=list)
    """Untracked files of the repository copied into a new worktree (paths from its root, no globs): what the task
    needs that git does not carry. Nothing else is copied, `.env` only when listed here; never committed."""


class Price(BaseModel):
    """What a model costs, in USD per million tokens (docs/config.md "prices.<name>"), for the cost display only."""

    model_config = ConfigDict(extra="forbid")
    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_read: float | None = Field(None, ge=0)
    """A prompt token read from the provider's cache; unset: Anthropic's 0.1 × `input`, else `input`."""
    cache_write: float | None = Field(None, ge=0)
    """A prompt token written to the provider's cache; unset: Anthropic's 1.25 × `input` (5-minute entries), else
    `input`."""


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @field_validator("sandbox", mode="before")
    @classmethod
    def _yaml_off(cls, value: Any) -> Any:
        return "off" if value is False else value  # YAML reads a bare `off` as false

    @field_validator("dry_run", mode="before")
    @classmethod
    def _dry_run_all(cls, value: Any) -> Any:
        return True if value == "all" else value  # `--dry-run=all` is `--dry-run`

    model: str | None = None
    """Model string, `PROVIDER:MODEL` (docs/config.md "Model strings")."""
    base_url: str | None = None
    """Endpoint of an `openai-compatible` provider."""
    trust: TrustName = "workspace"
    """What the model may do: discovery < read_only < workspace < shell < full."""
    approval: ApprovalMode | None = None
    """How risky calls are answered; unset means `ask` on a terminal, else `deny`."""
    max_tool_turns: int = Field(50, ge=1)
    """Bound on model round trips that use tools, per turn."""
    dry_run: DryRun = False
    """True: show tool calls and run none; "risky": run only the harmless ones (reads, the plan, the time...)."""
    data_dir: Path | None = None
    """Sessions, audit log and checkpoints; default `$XDG_DATA_HOME/sunwell`."""
    max_output_bytes: int = Field(100_000, ge=1_000)
    """Cap on one tool result's output."""
    max_tokens: int = Field(4096, ge=1)
    ripgrep_path: str | None = None
    approval_timeout_sec: float = Field(600, gt=0)
    provider_attempts: int = Field(3, ge=1, le=10)
    tool_timeout_sec: float = Field(30, gt=0)
    """Default time limit of one tool call."""
    blocked_paths: list[str] = Field(default_factory=list)
    """Extra path patterns the tools may not touch (added to the built-in ones)."""
    command_allowlist: list[str] = Field(default_factory=list)
    sandbox: Literal["auto", "off"] = "auto"
    """`off` runs shell commands without bubblewrap (a warning every turn)."""
    max_command_timeout_sec: float = Field(600, gt=0, le=3600)
    """Cap on the `timeout` a model may ask of run_command."""
    rate_limits: RateLimits = Field(default_factory=RateLimits)
    staging: Staging = Field(default_factory=Staging)
    background: Background = Field(default_factory=Background)
    models: dict[str, ModelOverride] = Field(default_factory=dict)
    system_prompt: str | None = None
    """Replaces the built-in system instructions."""
    compact_at: float = Field(0.8, gt=0, le=1)
    """Compact when the next request (its input and the output reserved for the answer) would pass this fraction
    of the context window: old tool results are elided first, then older turns are summarised."""
    compaction_model: str | None = None
    """A model string (`PROVIDER:MODEL`) that writes the summaries when history is compacted; default: the
    session's model."""
    env_passthrough: list[str] = Field(default_factory=list)
    """Variables commands may see besides PATH, HOME, LANG/LC_*, TERM, USER, SHELL, TMPDIR, TZ."""
    prices: dict[str, Price] = Field(default_factory=dict)
    """Per million tokens, keyed by model string or model id; on top of the defaults (sunwell.agent.usage)."""
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    """MCP servers whose tools become Sunwell tools named `SERVER__TOOL` (README "Tools from outside")."""
    network: NetworkSettings = Field(default_factory=NetworkSettings)
    web_search: WebSearchSettings | None = None
    learned_apis: dict[str, LearnedApiConfig] = Field(default_factory=dict)
    """Learned APIs (README "Learned APIs"); ignored in a workspace config."""
    hooks: HooksSettings = Field(default_factory=HooksSettings)
    """The user's hooks, run as the user; a workspace config's are proposals (`proposed_hooks`)."""
    subagent: SubagentSettings = Field(default_factory=SubagentSettings)
    worktrees: WorktreeSettings = Field(default_factory=WorktreeSettings)
    images: ImageSettings = Field(default_factory=ImageSettings)
    """How images are bounded before a model is sent one (README "Images"); a workspace config may only lower them."""
    _ignored: list[str] = PrivateAttr(default_factory=list)
    _proposed_mcp: dict[str, McpServerConfig] = PrivateAttr(default_factory=dict)
    _proposed_hooks: HooksSettings = PrivateAttr(default_factory=HooksSettings)

    @property
    def ignored_workspace_keys(self) -> list[str]:
        """Keys the workspace config tried to set but may not (WORKSPACE_MAY_NOT_SET, or a widening value)."""
        return self._ignored

    @property
    def proposed_mcp_servers(self) -> dict[str, McpServerConfig]:
        """MCP servers the workspace config proposes: never merged into `mcp_servers`, started only once the user
        approved that exact command (tools/mcp/consent.py); narrowed to the defaults (ask, sandboxed)."""
        return self._proposed_mcp

    @property
    def proposed_hooks(self) -> HooksSettings:
        """Hooks the workspace config proposes: never merged into `hooks`, run only once the user approved that
        exact command (sunwell/hooks/), and then in the command sandbox."""
        return self._proposed_hooks

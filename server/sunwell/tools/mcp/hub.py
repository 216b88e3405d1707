"""Every MCP server of one engine: which are configured, which a turn may use, and their tools.

Servers start lazily: `start` runs before a turn, for the servers whose tools that turn may be offered (trust high
enough, names allowed by `--tools` or the lens), all at once; a server that fails does not hold up the others. A
server the workspace config proposes waits for the user's approval first (tools/mcp/consent.py): the terminal or
VS Code asks when someone can answer (`--approve ask`), never `auto` or `deny`, which are about tool calls, not about
what a repository may start on your machine; else `sunwell mcp approve NAME` does it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sunwell.config import McpServerConfig
from sunwell.tools.base import Tool, Trust
from sunwell.tools.mcp.consent import Consents, fingerprint, launch_line
from sunwell.tools.mcp.naming import server_prefix
from sunwell.tools.mcp.surroundings import UNSANDBOXED, Notify, Opener, ServerDown, Surroundings
from sunwell.tools.mcp.vaults import ClientVault, KeyringVault, Vault
from sunwell.wire.approval import ApprovalRequest
from sunwell.wire.client import HEADLESS, Client, OpenUrl
from sunwell.wire.user_requests import ElicitParams, ElicitResult

if TYPE_CHECKING:
    from sunwell.tools.mcp.server import McpServer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServerStatus:
    name: str
    state: str
    """`stopped`, `starting`, `running`, `failed: REASON` or `awaiting approval` (docs/cli.md "sunwell mcp list")."""
    launch: str
    """The command line (with the variables it sets), or the url."""
    transport: str
    """`stdio` (a command) or `http` (a url)."""
    source: str
    """`user` (the user's config) or `workspace` (proposed by the workspace config)."""
    trust: str
    approval: str
    sandbox: str
    """`on` (with `write`, `network`), `off`, or `-` for a url."""
    tools: list[str]
    reason: str | None
    warning: str | None = None
    """What the user should know about running it (`sandbox: off`: UNSANDBOXED), else None."""

    def wire(self) -> dict[str, object]:
        return {"name": self.name, "state": self.state, "launch": self.launch,
                "transport": self.transport, "source": self.source, "trust": self.trust,
                "approval": self.approval, "sandbox": self.sandbox, "warning": self.warning, "tools": self.tools}


class McpHub:
    def __init__(self, around: Surroundings, client: Client = HEADLESS) -> None:
        self.around, self.client = around, client
        """`client`: the person on the other side (wire/client.py), asked to approve a server the workspace proposes,
        to fill in a server's form, to open its sign-in page and to keep its sign-in."""
        self.consents = Consents(around.data_dir)
        self.servers: dict[str, McpServer] = {}
        self._for_this_run: set[tuple[str, str]] = set()
        """(server, fingerprint) the user allowed for as long as this engine lives (allowSession)."""
        self._refused: set[tuple[str, str]] = set()
        """(server, fingerprint) the user refused: not asked again while this engine lives."""
        self._told: set[tuple[str, str]] = set()
        self._asking = asyncio.Lock()
        self._retired: set[asyncio.Task[None]] = set()
        self._session = ""
        """The session of the latest turn: whom a server's question goes to."""

    def configure(self, servers: dict[str, McpServerConfig], proposed: dict[str, McpServerConfig],
                  around: Surroundings | None = None) -> None:
        """New settings: a server whose config (or surroundings) changed is stopped and replaced; the others keep
        running, with their state and failure count."""
        around = around or self.around
        changed = around != self.around
        self.around, self.consents = around, Consents(around.data_dir)
        wanted = {name: (config, False) for name, config in servers.items()}
        wanted.update({name: (config, True) for name, config in proposed.items() if name not in servers})
        for name, server in list(self.servers.items()):
            if changed or name not in wanted or (server.config, server.proposed) != wanted[name]:
                self._retire(self.servers.pop(name))
        if not wanted:
            return
        from sunwell.tools.mcp.server import McpServer  # the SDK, only when a server is configured

        prefixes = {server_prefix(name): name for name in self.servers}
        for name, (config, is_proposed) in wanted.items():
            if name in self.servers:
                continue
            server = McpServer(name, config, around, proposed=is_proposed)
            server.elicit, server.sign_in = self._elicit, self
            if is_proposed and not self.consents.approved(around.workspace, name, config):
                server.wait_for_approval(f"proposed by the workspace config; {_how_to_approve(name)}")
            if (other := prefixes.setdefault(server_prefix(name), name)) != name:
                server.failures, server.state = 2, "failed"
                server.reason = f"its tool names would clash with the server {other}'s: rename one of them"
            self.servers[name] = server

    def _retire(self, server: McpServer) -> None:
        try:
            task = asyncio.get_running_loop().create_task(server.close())
        except RuntimeError:  # no loop: nothing of it is running
            return
        self._retired.add(task)
        task.add_done_callback(self._retired.discard)

    # ---- a turn --------------------------------------------------------------------------------------------------

    def wanted(self, trust: Trust, names: Collection[str] | None) -> list[McpServer]:
        """The servers whose tools a turn at `trust`, offered `names` (None: all), could use."""
        return [server for server in self.servers.values() if server.trust <= trust
                and (names is None or any(n.startswith(server_prefix(server.name)) for n in names))]

    async def start(self, trust: Trust, names: Collection[str] | None, notify: Notify, *, asking: bool = False,
                    ask_timeout: float = 600, session: str = "", turn: str = "") -> None:
        """Start what a turn may use (see `wanted`); failures become notices, never exceptions. `asking`: the client
        is asked to approve a server the workspace proposes (approvals in `ask` mode)."""
        servers = self.wanted(trust, names)
        self._session = session or self._session
        for server in servers:
            if server.proposed:
                try:
                    await self._consent(server, notify, asking, ask_timeout, session, turn)
                except OSError as exc:  # the approvals file: the server stays waiting
                    notify("error", "mcp_server", f"could not read or save the approval of {server.name}: {exc}")
        await asyncio.gather(*(self._ensure(server, notify) for server in servers))

    async def _ensure(self, server: McpServer, notify: Notify) -> None:
        try:
            await server.ensure(notify)
        except ServerDown:
            pass  # its notice is out; its tools (if it ever listed any) answer with the reason
        except Exception as exc:  # a bug of ours must not stop the turn from starting
            log.exception("starting the MCP server %s failed", server.name)
            notify("error", "mcp_server", f"MCP server {server.name} could not be started: {exc}")

    async def _consent(self, server: McpServer, notify: Notify, asking: bool, timeout: float, session: str,
                       turn: str) -> None:
        key = (server.name, fingerprint(server.config))
        if key in self._for_this_run or self.consents.approved(self.around.workspace, server.name, server.config):
            server.approved()
            return
        line = launch_line(server.config)
        how = _how_to_approve(server.name)
        server.wait_for_approval(f"proposed by the workspace config; {how}")
        if asking and self.client.answers("approve") and key not in self._refused:
            async with self._asking:
                decision = await self._ask(server, line, timeout, session, turn)
            if decision in ("allow", "allowSession"):
                if decision == "allow":
                    self.consents.approve(self.around.workspace, server.name, server.config)
                else:
                    self._for_this_run.add(key)
                server.approved()
                return
            self._refused.add(key)
        if key not in self._told:
            self._told.add(key)
            notify("warning", "mcp_server", f"the workspace config proposes the MCP server {server.name} "
                                            f"(`{line}`); it does not start until you approve it: {how}")

    async def _ask(self, server: McpServer, line: str, timeout: float, session: str, turn: str) -> str:
        config = server.config
        request = ApprovalRequest(
            session=session, turn=turn, call_id=f"mcp-server-{server.name}",
            name=f"MCP server {server.name} (proposed by the workspace config)",
            arguments={"server": server.name, **({"command": config.command, "args": config.args,
                                                   "env": sorted(config.env)} if config.command else
                                                  {"url": config.url})},
            risk="shell" if config.command else "network",
            preview={"kind": "command", "command": line, "cwd": config.cwd or "."})
        try:
            return (await asyncio.wait_for(self.client.approve(request), timeout)).decision
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - no answer is no
            log.info("approval of the MCP server %s failed: %r", server.name, exc)
            return "deny"

    async def _elicit(self, server: str, message: str, schema: dict[str, Any]) -> ElicitResult:
        if not self.client.answers("elicit"):
            return ElicitResult(action="decline")
        return await self.client.elicit(ElicitParams(session=self._session, server=server, message=message,
                                                     schema=schema))

    def vault(self, server: str, url: str) -> Vault:
        """Where `server`'s sign-in is kept (tools/mcp/surroundings.py `SignInFront`)."""
        if self.client.answers("secrets"):
            return ClientVault(self.client, server, url)
        return KeyringVault(self.around.data_dir, server, url)

    @property
    def opener(self) -> Opener | None:
        """Who opens a sign-in page for a person (tools/mcp/surroundings.py `SignInFront`)."""
        client = self.client
        if not client.answers("openUrl"):
            return None

        async def open_page(server: str, url: str) -> bool:
            return await client.open_url(OpenUrl(url=url, server=server))

        return open_page

    def tool_patterns(self) -> list[str]:
        """`SERVER__*` for every server: what a lens may name in `allowed_tools` before the server has run."""
        return [server_prefix(name) + "*" for name in self.servers]

    def tools(self) -> list[Tool]:
        """The tools of every server listed so far (a server down since keeps them: they answer with why)."""
        return [tool for server in self.servers.values() if server.state != "awaiting approval"
                for tool in server.tools]

    # ---- the user's commands -----------------------------------------------------------------------------------

    def status(self) -> list[ServerStatus]:
        """Every configured server as `sunwell mcp list` and `::mcp` show it."""
        rows = []
        for server in self.servers.values():
            config = server.config
            state = server.state
            if state == "failed":
                state = f"failed: {server.reason}"
            sandbox = ("-" if config.command is None else "off" if config.sandbox == "off" else
                       "on" + "".join(f", {what}" for what in ("write", "network") if getattr(config.sandbox, what)))
            rows.append(ServerStatus(
                name=server.name, state=state, launch=launch_line(config),
                transport="stdio" if config.command else "http", source="workspace" if server.proposed
                else "user", trust=config.needs, approval=config.approval, sandbox=sandbox,
                tools=[tool.name for tool in server.tools], reason=server.reason,
                warning=UNSANDBOXED if sandbox == "off" else None))
        return rows

    def status_of(self, name: str) -> ServerStatus:
        """One server's row of `status`. Raises KeyError."""
        return {row.name: row for row in self.status()}[name]

    async def restart(self, name: str, notify: Notify) -> ServerStatus:
        """Stop one server and start it again with a clean slate (failures forgotten): the user's Restart.
        Raises KeyError for an unknown name, ServerDown when it may not start (a proposal awaiting approval, a
        name clash); a start that fails is not raised, it shows in the state."""
        server = self.servers[name]
        if server.state == "awaiting approval":
            raise ServerDown(f"{name} waits for your approval: {_how_to_approve(name)}")
        first = next(other for other in self.servers if server_prefix(other) == server_prefix(name))
        if first != name:  # `configure` keeps the first server of a prefix; this one stays down
            raise ServerDown(server.reason or f"its tool names would clash with the server {first}'s")
        await server.stop()
        server.failures, server.state, server.reason = 0, "stopped", None
        await self._ensure(server, notify)
        return self.status_of(name)

    def approve(self, name: str) -> McpServer:
        """Remember the user's approval of a proposed server (`sunwell mcp approve NAME`). Raises KeyError."""
        server = self.servers[name]
        if server.proposed:
            self.consents.approve(self.around.workspace, name, server.config)
            server.approved()
        return server

    async def sign_out(self, name: str) -> tuple[bool, str]:
        """Forget a url server's sign-in (its tokens and registration) and stop it: the next use signs in anew.
        (whether one was kept, where); raises KeyError for an unknown name, ValueError for a stdio server."""
        server = self.servers[name]
        if server.config.url is None:
            raise ValueError(f"{name} is a stdio server: it has no sign-in")
        vault = self.vault(name, server.config.url)
        forgotten = await vault.clear()
        await server.stop()
        server.failures, server.reason = 0, None
        return forgotten, vault.where

    async def close(self) -> None:
        await asyncio.gather(*(server.close() for server in self.servers.values()), *self._retired,
                             return_exceptions=True)



def _how_to_approve(name: str) -> str:
    return f"approve it with `sunwell mcp approve {name}`"

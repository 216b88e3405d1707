"""One MCP server: its connection, its state, its tools, and every call to it.

The official SDK's `Client` is an async context manager whose task groups must be entered and left by one task, so
each running server has a runner task that holds the connection open until it is told to stop; calls from turns go
through the connected client.

One message from a server may take at most MAX_MESSAGE_BYTES (tools/mcp/oversize.py): one larger is cut off as it
arrives, over stdio (tools/mcp/stdio_transport.py) and HTTP (tools/mcp/http_transport.py), and the call it answers
fails with an error saying so while the server goes on.

Failure is data. A server that will not start, exits (its stderr reaching end of file is how an exit shows), does not
answer within `timeout`, or sends something that is not MCP has an *incident*: the call that saw it gets an error
result, one `mcp_server` notice says what happened (with the end of its stderr, which the model never sees), and the
server is stopped. The next use restarts it once; after a second incident its tools answer with the reason until
Sunwell starts again (or its config changes).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
from collections import deque
from typing import Any, Literal

import httpx2
from mcp import Client, types
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from sunwell import __version__
from sunwell.config import McpServerConfig
from sunwell.tools.base import Tool, ToolContext, ToolFailure, ToolReturn, Trust
from sunwell.tools.mcp.elicitation import Elicit, elicitation_callback
from sunwell.tools.mcp.http_transport import http_transport
from sunwell.tools.mcp.launch import Launch, LaunchError, stdio_launch
from sunwell.tools.mcp.oauth import NOTICE, oauth_auth
from sunwell.tools.mcp.offerings import list_offerings
from sunwell.tools.mcp.oversize import MAX_MESSAGE_BYTES, Oversized, is_too_large
from sunwell.tools.mcp.remote_tools import list_tools, sunwell_tools
from sunwell.tools.mcp.results import render_result
from sunwell.tools.mcp.stdio_transport import closing_after_spawn, stdio_transport
from sunwell.tools.mcp.surroundings import UNSANDBOXED, Notify, ServerDown, SignInFront, Surroundings
from sunwell.tools.policy.environment import EnvSecrets
from sunwell.tools.policy.guarded import quarantine_planted

log = logging.getLogger(__name__)
if not log.isEnabledFor(logging.DEBUG):
    # The SDK logs a server's faults (a line that is not JSON, a lost connection) as errors with tracebacks, on the
    # stderr that `sunwell run --json` keeps for its one error line; here they are incidents, told once as a notice.
    logging.getLogger("mcp").setLevel(logging.CRITICAL)
State = Literal["stopped", "starting", "running", "failed", "awaiting approval"]
MAX_FAILURES = 2
"""The first incident restarts the server at its next use; the second leaves it down."""
STOP_GRACE = 8.0
"""The stdio transport's shutdown (the SDK's sequence): stdin closed, 2 s, SIGTERM to the group, 2 s, SIGKILL."""
STDERR_TAIL = 12


class McpServer:
    def __init__(self, name: str, config: McpServerConfig, around: Surroundings, *, proposed: bool = False) -> None:
        self.name, self.config, self.around, self.proposed = name, config, around, proposed
        self.state: State = "stopped"
        self.reason: str | None = None
        """Why the server is down (state `failed`), or waiting (state `awaiting approval`)."""
        self.failures = 0
        self.tools: list[Tool] = []
        self.prompts: list[types.Prompt] = []
        self.resources: list[types.Resource] = []
        """Listed when it started (tools/mcp/offerings.py): `::SERVER:PROMPT` commands and `@SERVER:URI` mentions."""
        self.elicit: Elicit | None = None
        """Who answers when it asks the user (tools/mcp/elicitation.py); None declines. Sampling is never offered:
        the SDK answers it `Sampling not supported`."""
        self.sign_in: SignInFront | None = None
        """A url server's OAuth sign-in (tools/mcp/oauth.py): where it is kept, who opens the browser."""
        self._notify: Notify | None = None
        """The notices of the start under way: a sign-in must be told while it waits."""
        self._client: Client | None = None
        self._generation = 0
        self._failed_generation = 0
        self._stop = asyncio.Event()
        self._runner: asyncio.Task[None] | None = None
        self._launch: Launch | None = None
        self._lock = asyncio.Lock()
        self._notices: list[tuple[str, str, str]] = []  # (level, code, message)
        self._stderr: deque[str] = deque(maxlen=STDERR_TAIL)
        self._background: set[asyncio.Task[Any]] = set()
        self._secrets = EnvSecrets({**config.env, **{f"HEADER_{k}": v for k, v in config.headers.items()}})
        """What the config gives the server (tokens in `env`, an Authorization header) is masked in its answers."""

    @property
    def trust(self) -> Trust:
        return Trust[self.config.needs]

    # ---- lifecycle ---------------------------------------------------------------------------------------------

    async def ensure(self, notify: Notify | None = None) -> None:
        """Running when this returns, else ServerDown: started if stopped, restarted once after an incident."""
        self._notify = notify or self._notify
        try:
            async with self._lock:
                if self.state == "running" and self._client is not None:
                    return
                if self.state == "awaiting approval":
                    raise ServerDown(self.reason or "it waits for your approval")
                if self.failures >= MAX_FAILURES:
                    raise ServerDown(self.reason or "it failed")
                restart = self.failures > 0
                await self._start()
                tools = f"{len(self.tools)} tool{'' if len(self.tools) == 1 else 's'}"
                unsandboxed = f", {UNSANDBOXED}" if self.config.command and self.config.sandbox == "off" else ""
                self._notices.append(("info", "mcp_server", f"MCP server {self.name} was restarted ({tools})"
                                      if restart else f"MCP server {self.name} started ({tools}){unsandboxed}"))
        finally:
            self.flush(notify)

    async def _start(self) -> None:
        await self._stopped()  # what is left of an earlier start winds down first
        self._generation += 1
        generation = self._generation
        self.state, self._stop = "starting", asyncio.Event()
        self._stderr.clear()
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        ready.add_done_callback(lambda f: f.cancelled() or f.exception())  # read even when no one waits any more
        try:
            transport = await self._transport(generation)
        except LaunchError as exc:
            self._incident(generation, f"could not start: {exc}")
            raise ServerDown(self.reason) from None
        self._runner = asyncio.create_task(self._run(generation, transport, ready), name=f"mcp:{self.name}")
        try:
            # The SDK bounds every request (initialize and tools/list too) by `timeout`; this only backs it up.
            await asyncio.wait_for(asyncio.shield(ready), self.config.timeout * 2 + 10 + self.config.sign_in_timeout)
        except TimeoutError:
            self._incident(generation, f"did not finish starting within {self.config.timeout:g} s")
        except Exception as exc:  # noqa: BLE001 - whatever stopped it, the reason is what matters
            closed = isinstance(_leaf(exc), MCPError) and _leaf(exc).error.code == types.CONNECTION_CLOSED
            self._incident(generation, "exited while starting" if closed else f"could not start: {describe(exc)}")
        if self.state != "running":
            await self._stopped()
            raise ServerDown(self.reason or "it could not start")
        log.info("MCP server %s started with %d tools", self.name, len(self.tools))

    async def _transport(self, generation: int) -> Any:
        if self.config.url is not None:
            return http_transport(self.config.url, self.config.headers, auth=await self._oauth(self.config.url),
                                  rules=self.around.network)
        self._launch = await stdio_launch(self.config, jail=self.around.jail(), data_dir=self.around.data_dir,
                                          passthrough=self.around.env_passthrough, bwrap_path=self.around.bwrap_path,
                                          fetch=self._generation == 1)
        read_fd, write_fd = os.pipe()
        self._track(self._read_stderr(generation, read_fd))
        errlog = os.fdopen(write_fd, "w")
        return closing_after_spawn(stdio_transport(self._launch.params, errlog), errlog)

    async def _oauth(self, url: str) -> httpx2.Auth | None:
        """The sign-in, unless it is off or the config sends an Authorization header of its own."""
        if not self.config.sign_in_timeout or self.sign_in is None or any(
                name.lower() == "authorization" for name in self.config.headers):
            return None
        try:
            vault = self.sign_in.vault(self.name, url)
            return await oauth_auth(self.name, url, self.config.oauth, vault, self.sign_in.opener, self._tell)
        except Exception as exc:  # noqa: BLE001 - the vault (the keyring, the editor's secret storage) failed
            raise LaunchError(f"could not read its sign-in: {describe(exc)}") from None

    def _tell(self, level: str, message: str) -> None:
        if self._notify is not None:
            self._notify(level, NOTICE, message)
        log.info("%s", message)

    async def _run(self, generation: int, transport: Any, ready: asyncio.Future[None]) -> None:
        client = Client(transport, mode="legacy", cache=None, read_timeout_seconds=self.config.timeout,
                        message_handler=functools.partial(self._on_message, generation),
                        elicitation_callback=elicitation_callback(self.name, lambda: self.elicit),
                        client_info=types.Implementation(name="sunwell", version=__version__))
        try:
            async with client:
                self._adopt(await list_tools(client))
                self.prompts, self.resources = await list_offerings(client, self.name, self._hidden)
                self._client, self.state = client, "running"
                ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError("cancelled"))
            elif not isinstance(exc, asyncio.CancelledError):
                self._incident(generation, f"lost the connection: {describe(exc)}")
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            if self._generation == generation:
                self._client = None
                if self.state in ("running", "starting"):
                    self.state = "stopped"

    async def connected(self, notify: Notify | None = None) -> Client:
        """The connected client, the server started first if need be; ServerDown when it cannot be."""
        await self.ensure(notify)
        if self._client is None:
            raise ServerDown(self.reason or "it stopped")
        return self._client

    async def stop(self) -> None:
        """Stop the server (its process group is killed if it does not leave on its own)."""
        async with self._lock:
            await self._stopped()
            if self.state in ("running", "starting"):
                self.state = "stopped"

    async def _stopped(self) -> None:
        self._stop.set()
        runner, self._runner = self._runner, None
        if runner is not None and not runner.done():
            done, _ = await asyncio.wait({runner}, timeout=STOP_GRACE)
            if not done:
                runner.cancel()
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(runner, 2)
        self._client = None

    async def close(self) -> None:
        await self.stop()
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)

    # ---- incidents and notices -------------------------------------------------------------------------------

    def _incident(self, generation: int, reason: str) -> None:
        """Count one failure of this start of the server (later reports of the same one are ignored)."""
        if generation != self._generation or self._failed_generation == generation:
            return
        self._failed_generation = generation
        self.failures += 1
        self.state, self.reason = "failed", reason
        self._stop.set()
        then = ("it will be restarted when it is next needed" if self.failures < MAX_FAILURES
                else "its tools are unavailable until Sunwell restarts or its config changes")
        stderr = "\n".join(self._stderr)
        log.info("MCP server %s %s; %s%s", self.name, reason, then, f"\nits stderr ended with:\n{stderr}"
                 if stderr else "")  # info: the notice tells the user; stderr may carry only the final error
        self._notices.append(("error" if self.failures >= MAX_FAILURES else "warning", "mcp_server",
                              f"MCP server {self.name} {reason}; {then}."
                              + (f" Its stderr ended with: {stderr[-600:]}" if stderr else "")))

    def flush(self, notify: Notify | None) -> None:
        """Hand the notices waiting since the last turn (or from this call) to `notify`."""
        if notify is None:
            return
        notices, self._notices = self._notices, []
        for level, code, message in notices:
            notify(level, code, message)

    def wait_for_approval(self, reason: str) -> None:
        self.state, self.reason = "awaiting approval", reason

    def approved(self) -> None:
        if self.state == "awaiting approval":
            self.state, self.reason = "stopped", None

    async def _read_stderr(self, generation: int, fd: int) -> None:
        """The server's stderr, line by line, to the log (never to the model); its end means the process ended."""
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 16)
        pipe = os.fdopen(fd, "rb", buffering=0)
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
        try:
            while True:
                try:
                    line = await reader.readline()
                except ValueError:  # a line past the limit: take it in pieces
                    line = await reader.read(1 << 16)
                if not line:
                    break
                text = line.decode("utf-8", "replace").rstrip()
                log.info("MCP server %s: %s", self.name, text)
                self._stderr.append(text[:300])
        finally:
            transport.close()
        if not self._stop.is_set() and self.state == "running":  # a failed start is reported by the start
            self._incident(generation, "exited")

    async def _on_message(self, generation: int, message: Any) -> None:
        """Notifications and transport faults, as the SDK hands them over: a line that is not JSON-RPC is an
        incident; a changed tool list is listed again (in a task: the handler must not wait on the session)."""
        if isinstance(message, Oversized):
            self._incident(generation, f"sent {message} (it was not read whole)")
        elif isinstance(message, Exception):
            self._incident(generation, f"sent something that is not MCP ({describe(message)})")
        elif isinstance(message, types.ToolListChangedNotification):
            self._track(self._relist(generation))

    async def _relist(self, generation: int) -> None:
        client = self._client
        if client is None or generation != self._generation:
            return
        try:
            self._adopt(await list_tools(client))
            log.info("MCP server %s changed its tools: now %d", self.name, len(self.tools))
        except Exception as exc:  # noqa: BLE001
            self._incident(generation, f"could not list its changed tools: {describe(exc)}")

    def _track(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ---- tools -------------------------------------------------------------------------------------------------

    def _adopt(self, listing: list[types.Tool]) -> None:
        self.tools = sunwell_tools(self.name, self.config, listing, self.call, self._hidden)

    def _hidden(self, message: str) -> None:
        self._notices.append(("warning", "hidden_characters", message))

    async def call(self, tool: str, args: dict[str, Any], ctx: ToolContext) -> ToolReturn:
        """One `tools/call`; every way it can fail is a ToolFailure the model reads."""
        try:
            await self.ensure(ctx.turn.notify)
        except ServerDown as exc:
            raise ToolFailure("execution", f"the MCP server {self.name} is not available: {exc}",
                              "do not call its tools again in this conversation; tell the user") from None
        client, generation = self._client, self._generation
        assert client is not None
        try:
            result = await client.call_tool(tool, args)
        except MCPError as exc:
            raise self._call_failure(generation, tool, exc) from None
        except ValidationError as exc:
            self._incident(generation, f"answered {tool} with something that is not an MCP result ({describe(exc)})")
            raise ToolFailure("execution", f"the MCP server {self.name} {self.reason}") from None
        except (OSError, httpx2.HTTPError) as exc:
            self._incident(generation, f"could not be reached ({describe(exc)})")
            raise ToolFailure("network" if self.config.url else "execution",
                              f"the MCP server {self.name} {self.reason}") from None
        finally:
            self._quarantine()
            self.flush(ctx.turn.notify)
        try:
            return render_result(result).changed(self._secrets.mask)
        except ToolFailure as failure:
            failure.error = failure.error.model_copy(update={"message": self._secrets.mask(failure.error.message)})
            raise

    def _call_failure(self, generation: int, tool: str, exc: MCPError) -> ToolFailure:
        if is_too_large(exc.error):  # cut as it arrived; the server is still connected
            return ToolFailure("execution", f"the MCP server {self.name}'s result was too large: over "
                               f"{MAX_MESSAGE_BYTES:,} bytes, so it was not read whole",
                               "ask the tool for less (a narrower query, one page of the results)")
        if exc.code == types.REQUEST_TIMEOUT:
            self._incident(generation, f"did not answer {tool} within {self.config.timeout:g} s (it was stopped)")
            return ToolFailure("timeout", f"the MCP server {self.name} did not answer within "
                               f"{self.config.timeout:g} s; the call was cancelled and the server stopped",
                               "ask for less, or tell the user the server is too slow")
        if exc.code == types.CONNECTION_CLOSED:
            if self._failed_generation == generation and self.reason:  # what stopped it is known already
                return ToolFailure("execution", f"the MCP server {self.name} {self.reason} while running {tool}",
                                   "do not repeat a call that changes things without checking first")
            self._incident(generation, "closed the connection (it exited)")
            return ToolFailure("execution", f"the MCP server {self.name} exited while running {tool}",
                               "the server is restarted once on the next call; do not repeat a call that changes "
                               "things without checking first")
        # an error answer to this one request: the server itself is fine
        return ToolFailure("execution", f"the MCP server {self.name} refused the call: {exc.message}",
                           "check the arguments against the tool's parameters")

    def _quarantine(self) -> None:
        """A writable sandbox: whatever the server planted under a blocked or protected name leaves the workspace."""
        launch = self._launch
        if launch is None or not launch.sandboxed or self.config.sandbox == "off" or not self.config.sandbox.write:
            return
        moved, folder = quarantine_planted(self.around.jail(), launch.guarded, self.around.quarantine_dir)
        if moved:
            message = (f"MCP server {self.name} created {', '.join(moved)}, which sandboxed programs may not "
                       f"create; moved to {folder}")
            self._notices.append(("warning", "mcp_server", message))


def _leaf(exc: BaseException) -> BaseException:
    """The first exception inside the SDK's (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def describe(exc: BaseException) -> str:
    """One line for an exception, looking inside the SDK's exception groups for the cause."""
    exc = _leaf(exc)
    if isinstance(exc, MCPError):
        return exc.message
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    if isinstance(exc, ValidationError):
        return f"invalid message: {exc.errors()[0]['msg']}" if exc.errors() else "invalid message"
    text = str(exc) or type(exc).__name__
    return json.dumps(text)[1:-1][:300] if "\n" in text else text[:300]

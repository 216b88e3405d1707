"""Lifecycle and settings: `initialize`, `initialized`, `workspace/didChangeConfiguration`, `shutdown`.

`initialize` only notes the workspace root and the options, so that its answer (which the editor waits for) is
quick; `initialized` loads the settings, builds the engine and checks the data dir. A bad option is reported and
dropped (the rest still apply); a data dir that cannot be used is reported once, and lens features still work.

Its imports of the engine floor (agent/, tools/, config/) are in the handlers: the sidecar answers `initialize`
before it loads the engine (lsp/server.py).

The client's network rules are the user's own (VS Code keeps them in user settings only): they are added to the
config's `network.allow` and `network.deny`, which a workspace config may only add to, never replace. Its search
service, when it names one, replaces the config's `web_search`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pydantic import ValidationError
from pygls.uris import to_fs_path

from sunwell.clipping import CappedLogRecords
from sunwell.errors import ConfigError, SetupError, first_problem
from sunwell.lsp.failures import Unavailable
from sunwell.lsp.process import end_of_start
from sunwell.wire.options import InitializationOptions
from sunwell.wire.protocol import CONFIG_SECTION

SHUTDOWN_GRACE = 10.0
"""Seconds `shutdown` waits for MCP servers to stop."""

if TYPE_CHECKING:
    from sunwell.config import Settings
    from sunwell.lsp.server import SunwellServer


def setup(server: SunwellServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: SunwellServer, params: types.InitializeParams) -> None:
        ls.root = workspace_root(params)
        ls.options, problems = read_options(params.initialization_options, "initializationOptions")
        ls.startup_problems = problems

    @server.feature(types.INITIALIZED)
    def initialized(ls: SunwellServer, params: types.InitializedParams) -> None:
        for problem in ls.startup_problems:
            ls.show_message(problem)
        try:
            apply_settings(ls)
        finally:
            end_of_start()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: SunwellServer, params: types.DidChangeConfigurationParams) -> None:
        section = params.settings.get(CONFIG_SECTION) if isinstance(params.settings, Mapping) else None
        if section is None and _can_pull(ls):  # "pull" clients send no values, only the nudge
            answer = await ls.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(section=CONFIG_SECTION)]))
            section = answer[0] if answer else None
        if not isinstance(section, Mapping):
            return
        # the section is shared with the extension's own settings: keys that are not ours are not mistakes
        changed, problems = read_options(section, "configuration", warn_unknown=False)
        for problem in problems:
            ls.show_message(problem)
        # by field, not through model_dump: a nested option must stay a model
        ls.options = ls.options.model_copy(update={name: getattr(changed, name) for name in changed.model_fields_set})
        apply_settings(ls)

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: SunwellServer, params: None) -> None:
        ls.stop()
        if ls.has_engine:  # its MCP servers, before the client says `exit`
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ls.engine.aclose(), SHUTDOWN_GRACE)


def workspace_root(params: types.InitializeParams) -> Path:
    """The first workspace folder, else rootUri, else rootPath, else the current directory."""
    uris = [folder.uri for folder in params.workspace_folders or []] + [params.root_uri or ""]
    for uri in uris:
        path = to_fs_path(uri) if uri else None
        if path:
            return Path(path)
    return Path(params.root_path) if params.root_path else Path.cwd()


def read_options(raw: Any, source: str, warn_unknown: bool = True) -> tuple[InitializationOptions, list[str]]:
    """The valid options of `raw`; each invalid (or, with `warn_unknown`, unknown) key is dropped with a message
    naming it."""
    if raw is None:
        return InitializationOptions(), []
    if not isinstance(raw, Mapping):
        return InitializationOptions(), [f"{source} must be an object; ignored"]
    values = dict(raw)
    known = {info.alias or name for name, info in InitializationOptions.model_fields.items()}
    problems = [f"{source}: unknown setting '{key}' ignored" for key in values if key not in known and warn_unknown]
    values = {key: value for key, value in values.items() if key in known}
    while True:
        try:
            return InitializationOptions.model_validate(values), problems
        except ValidationError as exc:
            key, problem = first_problem(exc)
            key = key.split(".")[0]
            problems.append(f"{source}: invalid setting '{key}': {problem}; using the default")
            values.pop(key, None)


def resolve_settings(root: Path, options: InitializationOptions,
                     env: Mapping[str, str] = os.environ) -> tuple[Settings, list[str]]:
    """Config files and environment, with the client's options on top (they win, `dataDir` included).

    A setting the config layers reject is reported and the options are retried alone, then the defaults."""
    from sunwell.config import Settings, default_data_dir, load_settings

    flags = options.model_dump(exclude_none=True, exclude={"network", "web_search", "client_capabilities"})
    problems: list[str] = []
    try:
        settings = load_settings(root if root.is_dir() else None, flags, env)
    except ConfigError as exc:
        problems.append(f"{exc}; the sidecar uses the client's options and the defaults")
        try:
            settings = Settings.model_validate(flags)
        except ValidationError as err:
            key, problem = first_problem(err)
            problems.append(f"invalid setting '{key}': {problem}; using the defaults")
            settings = Settings()
        if settings.data_dir is None:
            settings.data_dir = default_data_dir(env)
    _add_client_web(settings, options, problems)
    if settings.approval is None:
        settings.approval = "ask"  # the sidecar asks its client unless told otherwise (docs/sidecar.md)
    return settings, problems


def _add_client_web(settings: Settings, options: InitializationOptions, problems: list[str]) -> None:
    """The client's network rules added to the settings', its search service in place of theirs; a bad entry is
    reported and left out (the others still apply)."""
    from sunwell.agent.exports import HostRules
    from sunwell.config.settings import WebSearchSettings

    network = getattr(options, "network", None)
    if network is not None:
        def valid(key: str, entries: list[str]) -> list[str]:
            kept = []
            for entry in entries:
                try:
                    HostRules(**{key: [entry]})
                except ValueError as exc:
                    problems.append(f"invalid setting {exc}; ignored")  # the message names the key and the entry
                else:
                    kept.append(entry)
            return kept

        current = settings.network
        settings.network = current.model_copy(update={
            "allow": list(dict.fromkeys([*current.allow, *valid("allow", network.allow)])),
            "deny": list(dict.fromkeys([*current.deny, *valid("deny", network.deny)])),
        })
    search = getattr(options, "web_search", None)
    if search is not None:
        try:
            settings.web_search = WebSearchSettings.model_validate(search.model_dump())
        except ValidationError as exc:
            key, problem = first_problem(exc)
            problems.append(f"invalid setting 'webSearch{'.' + key if key else ''}': {problem}; using the config's web_search")


def data_dir_problem(path: Path) -> str | None:
    """Why `path` cannot hold sessions (None when it can): missing and not creatable, or not writable."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"the data directory {path} cannot be created ({exc.strerror or exc})"
    if not os.access(path, os.W_OK | os.X_OK):
        return f"the data directory {path} is not writable"
    return None


def mask_logs() -> None:
    """Every log handler masks credentials from here on: an HTTP client logs each request's URL, which may carry a
    learned API's query key. Set with the first engine (`initialize` is answered first): nothing is sent before."""
    from sunwell.agent.logs import MaskedLogRecords

    for handler in {*logging.getLogger().handlers, *logging.getLogger("sunwell").handlers}:
        if not any(isinstance(check, MaskedLogRecords) for check in handler.filters):
            # in place of the capping filter: it caps as well, and masks before it cuts, never after
            handler.filters[:] = [check for check in handler.filters if not isinstance(check, CappedLogRecords)]
            handler.addFilter(MaskedLogRecords())


def apply_settings(ls: SunwellServer) -> None:
    """(Re)build the settings from the options; keep the engine (and its per-session state) when possible."""
    from sunwell.agent.engine import Engine
    from sunwell.lsp.client import SidecarClient

    mask_logs()
    settings, problems = resolve_settings(ls.root, ls.options)
    for problem in problems:
        ls.show_message(problem)
    previous = ls.settings
    ls.settings = settings
    moved = previous is None or Path(previous.data_dir) != Path(settings.data_dir)
    if moved and (problem := data_dir_problem(Path(settings.data_dir))):
        ls.show_message(f"{problem}: chat sessions are unavailable; lens features still work")
    try:
        engine = ls.engine
    except Unavailable:
        engine = None
    try:
        if engine is not None and Path(engine.settings.data_dir) == Path(settings.data_dir):
            engine.reconfigure(settings)  # its client reads what the client announces at each request
        else:
            ls.set_engine(Engine(settings, ls.root, client=SidecarClient(ls)))
            if engine is not None:
                ls.run_task(engine.aclose())  # the old engine's MCP servers
    except (SetupError, ValueError) as exc:  # a bad workspace; a setting only the engine can judge
        ls.show_message(f"cannot apply the settings: {exc}", types.MessageType.Error)
        if engine is None:
            ls.set_engine(None, str(exc))


def _can_pull(ls: SunwellServer) -> bool:
    workspace = ls.client_capabilities.workspace
    return bool(workspace and workspace.configuration)

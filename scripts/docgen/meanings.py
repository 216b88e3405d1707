"""What each thing of the reference means where the code does not say it (a field with no docstring, a code, an
argument with no help), in words of its own; the code's own words win, and a thing said in both places, or in
neither, is listed by `gen-docs.py` and stops it, so a new field, code or option is documented when it is added.
Keys: `Model.field` for a field, the value for a code, the option (or the positional's name) for an argument."""

from __future__ import annotations

FIELDS: dict[str, str] = {
    # every event, and the other models that name a session, a turn or a call
    "*.session": "The session's id.",
    "*.turn": "The turn's id: one user line and all it led to.",
    "*.call_id": "The id of the tool call, as the model's answer gave it.",
    "_Event.seq": "The event's place in its turn: 0 for the first, then one more each time, without a gap.",
    "TextEvent.delta": "The next piece of the model's answer, as it streams.",
    "ThinkingEvent.delta": "The next piece of the model's reasoning, where the provider shows it.",
    "ToolCallStartEvent.name": "The tool the model is calling.",
    "ToolCallDeltaEvent.args_delta": "The next piece of the call's arguments: raw JSON text as it streams.",
    "ToolCallEvent.name": "The tool, as the model named it.",
    "ToolCallEvent.arguments": "The call's arguments as the model wrote them, parsed (before they are checked); `{}` "
                               "when they could not be parsed.",
    "ToolCallEvent.raw": "The arguments' text, only when it could not be parsed even after repair.",
    "ApprovalEvent.decision": "What was decided for the call.",
    "ApprovalEvent.by": "`user` when a person answered; `policy` when the trust level, the approval mode or an "
                        "allow-for-session rule did.",
    "ToolResultEvent.name": "The tool that ran (or was refused).",
    "ToolResultEvent.ok": "False exactly when `error` is set.",
    "ToolResultEvent.output": "What the tool returned, cut to `max_output_bytes` with a line that says so.",
    "ToolResultEvent.error": "Why the call failed; null when it did not.",
    "ToolResultEvent.duration_ms": "How long the tool ran, in milliseconds (not the wait for approval).",
    "NoticeEvent.level": "How much it matters: `info`, `warning` or `error`.",
    "NoticeEvent.code": "What kind of notice it is ([codes.md](codes.md)).",
    "NoticeEvent.message": "One line for the person.",
    "CommandOutputEvent.command": "The `::command` line that ran.",
    "CommandOutputEvent.output": "What it answered, as markdown.",
    "ContextUsageEvent.used_tokens": "Tokens the last request used of the context window.",
    "ContextUsageEvent.window_tokens": "The model's context window, in tokens.",
    "PlanEvent.items": "The steps, in order.",
    "PlanEvent.explanation": "Why the plan is what it is, or what changed; null when the model gave no reason.",
    "DoneEvent.tool_calls": "Every call the model made in the turn: invalid, unknown, denied and dry-run ones too.",
    "DoneEvent.usage": "Tokens the turn used, over all its requests; null when the provider reported none.",
    "DoneEvent.error": "What went wrong, in one line; absent unless the status is `error`.",
    "UserMessageEvent.text": "The line, without what it attached.",
    "ToolError.code": "What kind of failure ([codes.md](codes.md)).",
    "ToolError.message": "What went wrong, for the model to act on; it names the parameter when one was wrong.",
    "ToolError.suggestion": "What to do instead, when there is something to say; may be null.",
    "PlanItem.step": "What the step is, in a few words.",
    "PlanItem.status": "Where the step stands.",
    "Usage.output_tokens": "Tokens the model wrote.",
    # the sidecar's params and results
    "ChatParams.text": "The user's line: a message for the model, or a `::command`.",
    "ChatParams.worktree": "Run the line in this worktree session (made from the workspace's branch when new): its "
                           "checkout is the turn's workspace, and what the turn changed is committed on its branch. "
                           "Refused when `worktrees.max_running` turns run in worktrees already.",
    "ChatParams.model": "The model for this turn (`PROVIDER:MODEL`); default: the configured one.",
    "ChatParams.trust": "The trust level for this turn; default: the configured one.",
    "ChatResult.status": "How the turn ended.",
    "ChatResult.tool_calls": "Every call the model made in the turn, as in the `done` event.",
    "ChatResult.usage": "Tokens the turn used; null when the provider reported none.",
    "ChatResult.error": "What went wrong, when the status is `error`.",
    "SessionsResult.sessions": "The stored sessions, newest first.",
    "SessionInfo.id": "The session's id, as `sunwell/chat` and `sunwell/session` take it.",
    "SessionInfo.title": "The start of its first line (80 characters at most); null when it has none.",
    "SessionInfo.turns": "How many turns it holds.",
    "SessionResult.messages": "The conversation as the model sees it now, in Sunwell's canonical messages.",
    "ToolsResult.tools": "The tools the model would be offered, with how each is answered.",
    "ToolInfo.name": "The tool's name, as the model calls it and a lens policy names it.",
    "ToolInfo.description": "What the model is told the tool does.",
    "ToolInfo.source": "Where the tool comes from: `core`, `lens:NAME` (a skill), `mcp` or `learned`.",
    "ToolInfo.policy": "`auto`: it runs without asking; `ask`: the user approves each call.",
    "ToolInfo.min_trust": "The lowest trust level that offers it.",
    "ModelsResult.current": "The configured model; null when none is.",
    "ModelsResult.models": "The models Sunwell knows, with what each can do.",
    "ModelInfo.provider": "The provider part of the model string.",
    "ModelInfo.capabilities": "What the capability system says of it: native tools or emulation, parallel calls, "
                              "context window, and more.",
    "CommandInfo.name": "The command without `::` (`SERVER:PROMPT` for an MCP prompt).",
    "CommandInfo.usage": "How to write it, with its arguments.",
    "CommandInfo.description": "What it does.",
    "ResourceInfo.server": "The MCP server that lists it.",
    "ResourceInfo.uri": "Its URI, as the server lists it.",
    "ResourceInfo.name": "Its name, as the server lists it.",
    "ResourceInfo.description": "What the server says of it, if anything.",
    "ResourceInfo.mime_type": "Its media type, when the server says.",
    "McpResult.servers": "Every configured or proposed server.",
    "McpServerInfo.name": "The server's name in the config.",
    "McpServerInfo.transport": "`stdio` for a command, `http` for a url.",
    "LearnedApisResult.apis": "Every learned API.",
    "LearnedApiInfo.name": "The name it was learned as: its tools are `NAME__OPERATION`.",
    "LearnedApiInfo.title": "The title its document gives.",
    "LearnedApiInfo.source": "The URL or path of the document it was learned from.",
    "LearnedApiInfo.hosts": "The hosts its tools call, and no others.",
    "LearnedForgetParams.name": "The learned API to forget, with its tools and credentials.",
    "LearnedForgetResult.forgotten": "It was there (and is gone now).",
    "SessionUsage.turns": "Each turn's usage, in order.",
    "SessionUsage.input_tokens": "Prompt tokens over the session, cached ones included.",
    "SessionUsage.output_tokens": "Tokens the model wrote over the session.",
    "SessionUsage.cache_read_tokens": "Of `inputTokens`: read from the provider's prompt cache.",
    "SessionUsage.cache_write_tokens": "Of `inputTokens`: written to the provider's prompt cache.",
    "SessionUsage.cost": "USD at the model's price; null when the model has no price.",
    "TurnUsage.output_tokens": "Tokens the model wrote in the turn.",
    "TurnUsage.cache_read_tokens": "Of `inputTokens`: read from the prompt cache.",
    "TurnUsage.cache_write_tokens": "Of `inputTokens`: written to the prompt cache.",
    "ApprovalRequest.name": "The tool the call is for.",
    "ApprovalRequest.arguments": "The call's arguments, as they will run.",
    "ApprovalRequest.risk": "What kind of thing the call would do ([codes.md](codes.md)).",
    "ApprovalRequest.preview": "What the call will do, shown before it runs; its `kind` says which shape.",
    "ApproveResult.decision": "`allow` this call, `deny` it, or `allowSession`: allow it and what the preview "
                              "names (the exact tool, command, or host) for the rest of the session.",
    "AskParams.question": "The question, as the model wrote it.",
    "CodeIntelParams.kind": "What is asked: a file's diagnostics, workspace symbols, a definition or references.",
    "CodeIntelParams.symbol": "The symbol whose definition or references are asked.",
    "CodeIntelResult.items": "What the editor found, each at a place in a file.",
    "SecretParams.action": "What to do with the secret.",
    "SecretParams.key": "The secret's name, under the client's own prefix.",
    "Mention.kind": "What is attached.",
    "Attachment.kind": "What was attached.",
    "Attachment.body": "What the model read of it.",
    "SystemMessage.text": "The instructions.",
    "UserMessage.text": "The user's line, without its attachments.",
    "AssistantMessage.parts": "What the model answered, part by part, in order.",
    "AssistantMessage.text": "The text parts, joined: on the wire for readers that need no more.",
    "AssistantMessage.thinking": "The thinking parts, joined.",
    "AssistantMessage.tool_calls": "The calls of the tool-call parts.",
    "ToolResultMessage.name": "The tool that answered.",
    "ToolResultMessage.output": "What the tool returned.",
    "ToolResultMessage.ok": "False when the call failed.",
    "ToolResultMessage.error": "Why it failed; null when it did not.",
    "TextPart.text": "Text of the answer.",
    "ThinkingPart.text": "The model's reasoning.",
    "ToolCallPart.call": "The call the model made.",
    "ToolCall.id": "The call's id.",
    "ToolCall.name": "The tool called.",
    "ToolCall.arguments": "The arguments, as an object.",
    "DiffPreview.after": "The file as the call would leave it.",
    "CommandPreview.command": "The command line, exactly as it will run.",
    "EffectsPreview.command": "The command line that ran.",
    "EffectsPreview.cwd": "Where it ran, workspace-relative.",
    "EffectsPreview.exit_code": "Its exit code.",
    "EffectsPreview.output": "What it printed.",
    "EffectsPreview.changes": "Every file it changed in its overlay: none reaches the workspace unless the answer "
                              "is `allow`.",
    "FileChange.path": "Workspace-relative.",
    "FileChange.change": "What happened to the file.",
    "FileChange.binary": "The file is not text: `before` and `after` are null.",
    "ToolPreview.tool": "The tool's name on its server.",
    "ToolPreview.arguments": "The arguments it will get.",
    "FetchPreview.url": "The whole URL, as it will be requested.",
    "LearnPreview.name": "The name the API will be learned as.",
    "LearnPreview.hosts": "The hosts its tools will call.",
    "LearnPreview.operations": "The operations it will offer as tools.",
    "LearnedOperation.tool": "The tool's name, `NAME__OPERATION`.",
    "LearnedOperation.method": "The HTTP method.",
    "LearnedOperation.path": "The path on the API's server.",
    "LearnedOperation.summary": "What the document says it does.",
    # initializationOptions
    "InitializationOptions.model": "The model (`PROVIDER:MODEL`), over the config's `model`.",
    "InitializationOptions.trust": "The trust level, over the config's `trust`.",
    "InitializationOptions.max_tool_turns": "Bound on model round trips with tools, per turn.",
    "InitializationOptions.base_url": "Endpoint of the `openai-compatible` provider.",
    "InitializationOptions.approval_timeout_sec": "Seconds `sunwell/approve` waits for an answer before the call is "
                                                  "denied (by policy).",
    "InitializationOptions.ripgrep_path": "The `rg` executable search uses; empty: the built-in search.",
    "InitializationOptions.staging": "What one command may change in its staging overlay (`staging`).",
    "StagingOptions.max_bytes": "Bytes one command may change.",
    "StagingOptions.max_files": "Files one command may change.",
    "NetworkOptions.allow": "Added to `network.allow`.",
    "NetworkOptions.deny": "Added to `network.deny`.",
    "WebSearchOptions.provider": "`searxng`, `brave` or `tavily`.",
    "WebSearchOptions.base_url": "The service's endpoint; default: the provider's public one.",
    # settings
    "Settings.max_tokens": "The most tokens the model may write in one answer.",
    "Settings.ripgrep_path": "The `rg` executable `search_files` uses; unset: `rg` on PATH; empty: the built-in "
                             "search.",
    "Settings.approval_timeout_sec": "Seconds an approval waits for an answer; then the call is denied, by policy.",
    "Settings.provider_attempts": "Attempts at a request that fails with 429, a 5xx or a lost connection before "
                                  "anything streamed (each retry a `provider_retry` notice).",
    "Settings.command_allowlist": "Commands run without asking: an exact command line each, never a prefix.",
    "Settings.rate_limits": "Per-session limits on tool calls.",
    "Settings.staging": "What one command may change before its staged changes are refused.",
    "Settings.background": "Background processes (`run_command` with `background`): how many run at once, the "
                           "output kept of each, whether they end with their session, the folders they may write. "
                           "A workspace config may only narrow it.",
    "Settings.worktrees": "Worktree sessions (`sunwell run --worktree`): where their checkouts go, how many run a "
                          "turn at once, the untracked files copied into a new one. A workspace config may only "
                          "narrow it.",
    "Settings.models": "Per-model overrides, keyed by model string or bare model id.",
    "Settings.network": "The web tools' host rules and limits.",
    "Settings.web_search": "The search service `web_search` uses; without it the tool is not offered.",
    "Settings.subagent": "The limits of `task`'s sub-agents.",
    "RateLimits.tool_calls_per_min": "Tool calls a minute, in all.",
    "RateLimits.writes_per_min": "Writes and edits a minute.",
    "RateLimits.shell_per_min": "Commands a minute.",
    "RateLimits.bytes_written": "Bytes the tools may write in a session.",
    "Staging.max_bytes": "Bytes one command may change.",
    "Staging.max_files": "Files one command may change.",
    "ModelOverride.native_tools": "Whether the model is sent tools natively (else they are taught in the prompt).",
    "ModelOverride.context_window": "The model's context window in tokens; wins over what the server or the "
                                    "registry says.",
    "ModelOverride.parallel_calls": "Whether the model may make several calls in one answer.",
    "ModelOverride.temperature": "The sampling temperature sent with each request.",
    "Price.input": "A prompt token.",
    "Price.output": "A token the model wrote.",
    "McpServerConfig.command": "The program of a stdio server.",
    "McpServerConfig.args": "Its arguments.",
    "McpServerConfig.url": "The endpoint of a streamable HTTP server.",
    "McpServerConfig.headers": "Headers sent with every request to `url`.",
    "McpServerConfig.approval": "`ask`: each call is approved; `auto`: its tools run without asking.",
    "McpServerConfig.disabled_tools": "The server's tools never offered.",
    "McpSandbox.network": "The network reachable (else none).",
    "WebSearchSettings.provider": "The service: `searxng` (`base_url` of your instance), `brave` or `tavily`.",
    "LearnedApiConfig.source": "The URL or path of its OpenAPI document.",
    "LearnedApiConfig.rate_per_min": "Calls a minute at most.",
    "HooksSettings.turn_end": "When a turn ends.",
    "HooksSettings.session_start": "When a session starts.",
}
METHODS: dict[str, str] = {
    "sunwell/chat": "Sends a user line: a turn runs, its events come as `sunwell/chatEvent`, and the request is "
                    "answered when the turn ends (after its `done` event).",
    "sunwell/sessions": "The stored sessions.",
    "sunwell/session": "A stored session: its messages and its turns as events, to draw it again.",
    "sunwell/undo": "Puts back the files the session's last turn that changed files changed.",
    "sunwell/tools": "The tools a turn would offer, for a lens and a trust level.",
    "sunwell/models": "The configured model and the models Sunwell knows.",
    "sunwell/commands": "The chat commands, the MCP servers' prompts and resources.",
    "sunwell/mcp": "The MCP servers, their state and tools (as `sunwell mcp list`).",
    "sunwell/mcpRestart": "Stops a configured MCP server and starts it again.",
    "sunwell/learnedForget": "Forgets a learned API, its tools and its credentials.",
    "sunwell/learnedApis": "The learned APIs (VS Code's \"Sunwell: Learned APIs\"), as `sunwell tools list --json` "
                           "shows them.",
    "sunwell/usage": "Tokens per turn and in total of a session, and their cost at the model's price (`prices:`).",
    "sunwell/processes": "A session's background processes, as VS Code's processes strip lists them (the ended ones "
                         "too).",
    "sunwell/worktrees": "The worktree sessions of the workspace's repository (README \"Worktree sessions\"), as "
                         "`sunwell worktrees list --json` shows them.",
    "sunwell/worktreeAction": "Merges, discards or continues a worktree session (`sunwell worktrees merge | drop`).",
    "sunwell/approve": "Asks the user to allow a risky call, with a preview of what it will do.",
}
ARGUMENTS: dict[str, str] = {
    "--trust": "the trust level for this run (default: config `trust`, else `workspace`)",
    "--max-tool-turns": "bound on model round trips with tools (default: config `max_tool_turns`, else 50)",
    "--debug": "show tracebacks and debug logs (also accepted after the command)",
    "--workspace": "the workspace (default: the current directory)",
    "--limit": "how many calls to show at most",
    "sunwell sessions action": "`list` the sessions, `show` one, or `export` one as markdown",
    "sunwell sessions id": "the session, for `show` and `export`",
    "sunwell lens check files": "the lens files to check",
    "sunwell mcp approve name": "the proposed server",
    "sunwell mcp login name": "the url server",
    "sunwell mcp logout name": "the url server",
    "sunwell tools forget name": "the learned API",
    "sunwell hooks approve numbers": "the numbers `sunwell hooks list` shows",
    "sunwell models ids": "model ids or strings (default: the configured model)",
}
EXITS: dict[str, str] = {
    "EXIT_OK": "done; for a turn, status `completed`",
    "EXIT_ERROR": "an error, said in one line on stderr (a traceback only with `--debug`); for a turn, status "
                  "`error`",
    "EXIT_USAGE": "wrong arguments, a bad setting or a setup the command cannot start with (no model, a missing "
                  "key, a session of another workspace)",
    "EXIT_LIMIT": "the turn stopped at `max_tool_turns` (status `limitReached`)",
    "EXIT_CANCELLED": "cancelled with Ctrl-C (status `cancelled`)",
}
ERRORS: dict[str, str] = {
    "validation": "the arguments do not match the tool's schema; the message names the parameter",
    "unknown_tool": "no tool of that name is offered in this turn",
    "permission": "refused by policy: a path outside the workspace (`..`, absolute, a symlink that leaves it), a "
                  "blocked path, a trust level too low, a refused host, address or URL",
    "not_found": "a path inside the workspace that does not exist",
    "unsupported": "a binary file, a folder where a file is expected, a text that cannot be decoded, or something "
                   "this front end cannot do",
    "denied": "the approval was denied",
    "dry_run": "a dry run: the call was shown, not run",
    "timeout": "the tool ran past its time limit (its process group is killed)",
    "rate_limit": "a per-session rate limit was reached",
    "execution": "the tool ran and failed (a command's non-zero exit is not one: that is `ok` with the exit code)",
    "network": "a network tool could not connect, timed out, was answered with an HTTP error or too large an "
               "answer; the message says which",
    "interrupted": "the turn was cancelled, or the process ended, while the tool ran",
}
NOTICES: dict[str, str] = {
    "provider_retry": "the provider failed (429, 5xx, a lost connection) before anything streamed; the request is "
                      "tried again",
    "context_overflow": "the provider refused a request as too long; the window was corrected and the request "
                        "made to fit",
    "compacted": "older history was summarised; the message says how many messages and tokens",
    "workspace_config_ignored": "the workspace config or a lens tried to widen a setting; the message names the "
                                "keys, which were ignored",
    "mcp_server": "an MCP server started, failed or was restarted",
    "result_cut": "a tool's output was cut to fit the context window",
    "tools_fitted": "the tools' descriptions were trimmed, or some tools left out, to fit a small context window",
    "sandbox_off": "commands run without the sandbox, as the user configured (`sandbox: off`)",
    "sandbox_unavailable": "no sandbox on this machine: each command is asked before it runs, with your rights",
    "effects_unavailable": "a command's changes cannot be staged and previewed here: it is asked before it runs",
    "loop_guard": "the model kept making the same failing call; the turn was stopped",
    "empty_answer": "the model answered nothing",
    "answer_from_results": "a small model went round in circles: it is asked to answer from the results it has",
    "repeated_call": "the model repeated a read with the same arguments and was given the earlier result",
    "repaired_arguments": "a call's malformed JSON arguments were repaired",
    "repaired_tool_name": "a misspelt tool name was read as the tool it was meant to be",
    "coerced_arguments": "an argument of the wrong but unambiguous type (`\"5\"` for 5) was converted",
    "emulation_fallback": "the server refused native tool calls; tools are taught in the prompt from now on",
    "constrained_decoding_refused": "the server refused constrained decoding; emulated calls are read from free "
                                    "text",
    "tool_call_from_text": "the model wrote a call as text instead of a native call; it was recovered",
    "tool_call_repaired": "an emulated call written as text was repaired to be read",
    "tool_call_cut_off": "the answer was cut off inside a call, which was not run",
    "tool_call_unreadable": "text between a dialect's call markers read as no call: it was left out of the answer, "
                            "and the notice quotes it",
    "tool_call_unknown": "the model wrote a call to a tool that was not offered: nothing ran, the notice names it",
    "resumed": "an interrupted turn is taken up where its log ends",
    "call_interrupted": "a call was running when the process ended and is not run again; check what it did",
    "hook": "a hook denied a call, failed, or waits for the user's approval",
    "mcp_auth": "an MCP server needs the user to sign in, or the sign-in failed",
    "hidden_characters": "invisible characters (Unicode tags, zero-width, bidi controls) were removed from "
                         "instructions, an MCP description or a learned API",
    "images_not_seen": "the model cannot see images (no `vision` capability): each image of the turn was sent as a "
                       "line of text saying one was attached; `models: {MODEL: {vision: true}}` says a model sees",
    "image_refused": "an image sent with the line was not attached (not a PNG, JPEG, GIF or WebP by its bytes, an "
                     "SVG, damaged, too large, a blocked or outside path, or past `images.per_message`); the "
                     "message says which, and the line went on without it",
}
VALUES: dict[str, str] = {
    "completed": "the model answered without more calls",
    "cancelled": "the user cancelled the turn",
    "limitReached": "`max_tool_turns` was reached; the model was asked for a summary without tools",
    "error": "the turn failed (a provider fault after streaming began, a setup problem); `done.error` says why",
    "interrupted": "the process ended while the turn ran; only ever read back from the log, and resumable",
    "allow": "the call runs",
    "deny": "the call does not run; the model gets a `denied` error",
    "allowSession": "the call runs, and so will the same tool (the same command line, the same host) for the rest "
                    "of the session",
    "user": "a person answered",
    "policy": "the trust level, an approval mode or an allow-for-session rule decided",
    "write": "writes or edits a file",
    "shell": "runs a command",
    "network": "reaches the network: a web page, a learned API",
    "mcp": "calls a tool of an MCP server",
}

PROBLEMS: list[str] = []
"""What is said twice or not at all, found while the pages were built."""


def said(meanings: dict[str, str], key: str, what: str, in_code: str | None = None, shared: str = "") -> str:
    """What `key` means: the code's words (`in_code`) or the table's, exactly one of them; the table's `shared`
    entry (`*.session`) serves every key it names that has no words of its own."""
    extra = meanings.get(key)
    if not in_code and not extra:
        extra = meanings.get(shared)
    if in_code and extra:
        PROBLEMS.append(f"{what} {key} is said in the code and in scripts/docgen/meanings.py: keep one")
    if not in_code and not extra:
        PROBLEMS.append(f"{what} {key} means nothing yet: say it in the code, or in scripts/docgen/meanings.py")
    return in_code or extra or ""

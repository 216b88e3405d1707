"""Names a lens file may mention, with their docs: core tools, trust levels and `::commands`.

The command docs live in `sunwell.commands_spec`, next to the parser, where the command registry
(`sunwell.agent.commands`) reads them too; they are re-exported here for the lens language features.
"""

from __future__ import annotations

from dataclasses import dataclass

from sunwell.commands_spec import CHAT_COMMANDS, CommandDoc
from sunwell.vocabulary import TRUST_NAMES

__all__ = ["CHAT_COMMANDS", "CORE_TOOLS", "CORE_TOOL_DOCS", "TRUST_DOCS", "TRUST_LEVELS", "CommandDoc", "ToolDoc",
           "trust_markdown"]


@dataclass(frozen=True)
class ToolDoc:
    name: str
    summary: str
    parameters: str
    trust: str
    approval: str

    def markdown(self) -> str:
        return (f"**`{self.name}`** — core tool\n\n{self.summary}\n\n"
                f"Parameters: {self.parameters}\n\nNeeds trust `{self.trust}` · approval `{self.approval}`")


CORE_TOOL_DOCS: dict[str, ToolDoc] = {doc.name: doc for doc in (
    ToolDoc("list_files", "List files under a directory of the workspace.",
            '`path` (default "."), `pattern` (glob, default "*"; `**` recurses)', "discovery", "auto"),
    ToolDoc("search_files", "Search file contents with a regular expression.",
            '`pattern` (regex), `path` (default "."), `glob` (optional file filter)', "discovery", "auto"),
    ToolDoc("read_file", "Read a text file, or a range of its lines.",
            "`path`, `offset` (first line, 1-based, optional), `limit` (lines, optional)", "read_only", "auto"),
    ToolDoc("write_file", "Create or overwrite a file (atomic, checkpointed so the turn can be undone).",
            "`path`, `content`", "workspace", "ask"),
    ToolDoc("edit_file", "Replace exact text in a file; `old_text` must match exactly once unless `replace_all`.",
            "`path`, `old_text`, `new_text`, `replace_all` (default false)", "workspace", "ask"),
    ToolDoc("run_command", "Run a shell command in the sandbox (non-zero exit is a normal result).",
            '`command`, `cwd` (default "."), `timeout` (seconds, default 30)', "shell", "ask"),
    ToolDoc("web_fetch", "Fetch a web page (http/https) as markdown; the user allows each host (network.allow).",
            '`url`, `format` (`markdown` default, `text`, `raw`), `offset` (characters, optional)', "read_only",
            "ask, per host"),
    ToolDoc("web_search", "Search the web through the configured service (offered only when `web_search:` is set).",
            "`query`, `max_results` (1-10, default 5)", "read_only", "auto"),
    ToolDoc("update_plan", "Show and keep current a checklist of the task's steps (a `plan` event).",
            "`items` (`[{step, status: pending|in_progress|done}]`), `explanation` (optional)", "discovery", "auto"),
    ToolDoc("ask_user", "Ask the user a question, with likely answers as options (VS Code card, terminal prompt).",
            "`question`, `options` (list of strings, optional)", "discovery", "auto"),
    ToolDoc("task", "A read-only sub-agent: explores with the read tools, returns only its final answer.",
            "`description` (a few words), `prompt` (complete instructions)", "read_only", "auto"),
    ToolDoc("get_time", "The current date and time.",
            '`format` (`iso8601` default, `unix`, `human`), `timezone` (IANA, optional)', "discovery", "auto"),
    ToolDoc("math_eval", "Evaluate an arithmetic expression with math's functions; bounded size and time.",
            "`expression`", "discovery", "auto"),
    ToolDoc("kv_set", "Store a text value under a key for the session (64 KB in all).", "`key`, `value`",
            "discovery", "auto"),
    ToolDoc("kv_get", "Read a value stored with kv_set in this session.", "`key`", "discovery", "auto"),
    ToolDoc("diagnostics", "The editor's problems (errors, warnings) of a file, a folder or the workspace (VS Code).",
            "`path` (optional)", "discovery", "auto"),
    ToolDoc("find_symbol", "Workspace symbols by name, from the editor's language features (VS Code).", "`query`",
            "discovery", "auto"),
    ToolDoc("find_definition", "Where a symbol is defined, as the language server resolves it (VS Code).",
            "`symbol`, `path` (a file using it, optional)", "discovery", "auto"),
    ToolDoc("find_references", "Every use of a symbol, as the language server resolves it (VS Code).",
            "`symbol`, `path` (a file using it, optional)", "discovery", "auto"),
)}
CORE_TOOLS: tuple[str, ...] = tuple(CORE_TOOL_DOCS)

TRUST_DOCS: dict[str, str] = {
    "discovery": "List and search files only.",
    "read_only": "`discovery` + read files, fetch web pages (each host allowed by the user).",
    "workspace": "`read_only` + write and edit files in the workspace.",
    "shell": "`workspace` + run shell commands in the sandbox.",
    "full": "`shell` + commands may use the network.",
}
TRUST_LEVELS = TRUST_NAMES
assert tuple(TRUST_DOCS) == TRUST_NAMES, "a trust level without its doc"


def trust_markdown(level: str) -> str:
    order = " < ".join(f"**{name}**" if name == level else name for name in TRUST_LEVELS)
    return f"**`{level}`** — trust level\n\n{TRUST_DOCS[level]}\n\n{order}\n\nA lens can only lower the user's level."

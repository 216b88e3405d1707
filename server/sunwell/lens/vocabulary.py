"""Names a lens file may mention, with their docs: core tools, trust levels and `::commands`.

The chat-commands module owns the real command registry; `CHAT_COMMANDS` is the list the lens language features
use until that module passes its own (every language function takes a `commands` argument).
"""

from __future__ import annotations

from dataclasses import dataclass


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


@dataclass(frozen=True)
class CommandDoc:
    name: str
    """Without the leading `::`."""
    usage: str
    description: str

    def markdown(self) -> str:
        return f"**`{self.usage}`** — chat command\n\n{self.description}"


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
)}
CORE_TOOLS: tuple[str, ...] = tuple(CORE_TOOL_DOCS)

TRUST_DOCS: dict[str, str] = {
    "discovery": "List and search files only.",
    "read_only": "`discovery` + read files.",
    "workspace": "`read_only` + write and edit files in the workspace.",
    "shell": "`workspace` + run shell commands in the sandbox.",
    "full": "`shell` + network tools.",
}
TRUST_LEVELS: tuple[str, ...] = tuple(TRUST_DOCS)


def trust_markdown(level: str) -> str:
    order = " < ".join(f"**{name}**" if name == level else name for name in TRUST_LEVELS)
    return f"**`{level}`** — trust level\n\n{TRUST_DOCS[level]}\n\n{order}\n\nA lens can only lower the user's level."


CHAT_COMMANDS: tuple[CommandDoc, ...] = (
    CommandDoc("help", "::help", "List the chat commands."),
    CommandDoc("skills", "::skills", "List the skills of the active lens."),
    CommandDoc("lens", "::lens [name|path]", "Show the active lens, or activate another one."),
    CommandDoc("focus", "::focus <scope>", "Narrow the conversation to a path or a topic."),
    CommandDoc("context", "::context", "Show what the model's context holds."),
    CommandDoc("save", "::save <path>", "Save the conversation to a file in the workspace."),
    CommandDoc("clear", "::clear", "Start over with an empty conversation."),
    CommandDoc("tools", "::tools", "List the tools the model may use now."),
    CommandDoc("model", "::model [id]", "Show or switch the model."),
    CommandDoc("trust", "::trust [level]", "Show or change the trust level."),
    CommandDoc("undo", "::undo", "Undo the file changes of the last turn."),
    CommandDoc("run", "::run <skill> [args]", "Run a skill of the active lens."),
)

"""The `::command` syntax (docs/cli.md "Chat commands") and the docs of every command, free of the engine.

Both the command registry (`sunwell.agent.commands`) and the lens language features (`sunwell.lens`) read this
module, which is why it imports nothing of Sunwell's: `lens` must never import `agent`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

COMMAND_NAME = r"[a-zA-Z][\w-]*"
"""A command's name: a letter, then word characters or `-` (ASCII: `parse_command` checks). A regular expression the
extension's `commands.generated.ts` and the TextMate grammar's test take as it is (scripts/gen-commands.py)."""
PROMPT_NAME = r"[a-zA-Z][\w.-]*:[\w./-]+"
"""`SERVER:PROMPT`, an MCP server's prompt as a command (agent/mcp_commands.py); its name keeps its case."""

# `::name` first on the line (after blanks), then a blank or the end. So `a::b`, `std::vector`, `x ::help`, `::`
# alone, `::9x`, `:::note` and `::save/tmp` are not commands.
_COMMAND = re.compile(rf"\s*::({COMMAND_NAME}|{PROMPT_NAME})(?:\s+(.*))?", re.DOTALL)


@dataclass(frozen=True)
class Command:
    name: str
    """Lower-cased, without the `::`."""
    args: str
    """The rest of the line, stripped ("" when there is none)."""


def parse_command(line: str) -> Command | None:
    """The command a user line holds, or None when the line is an ordinary message for the model."""
    match = _COMMAND.fullmatch(line.rstrip("\r\n"))
    if match is None or not match[1].isascii():  # \w is Unicode-aware; names are ASCII
        return None
    name = match[1] if ":" in match[1] else match[1].lower()
    return Command(name, (match[2] or "").strip())


@dataclass(frozen=True)
class CommandDoc:
    name: str
    """Without the leading `::`."""
    usage: str
    description: str
    terminal_only: bool = False
    """Only `sunwell chat` offers it (`::exit`); the sidecar's list leaves it out."""

    def markdown(self) -> str:
        return f"**`{self.usage}`** — chat command\n\n{self.description}"


COMMAND_DOCS: tuple[CommandDoc, ...] = (
    CommandDoc("help", "::help [command]", "List the chat commands, or show how to use one."),
    CommandDoc("skills", "::skills", "List the skills of the active lens."),
    CommandDoc("lens", "::lens [name|path]",
               "Show the active lens and the available ones, or activate one for this chat (`::lens off` "
               "deactivates it)."),
    CommandDoc("focus", "::focus <scope>",
               "Narrow the model's attention to a path, glob or topic for the next turns; `::focus` alone clears "
               "it."),
    CommandDoc("context", "::context",
               "Show what the model sees and how full its context window is: the window and where it came from, "
               "instructions (with AGENTS.md), tools, history and the largest tool results."),
    CommandDoc("compact", "::compact [what to keep]",
               "Summarise the conversation so far into one message now, keeping the last turn as it is; the words "
               "after the command say what the summary must keep."),
    CommandDoc("save", "::save <path>", "Save the conversation as markdown to a file in the workspace."),
    CommandDoc("clear", "::clear", "Start a new conversation (the old one stays in `sunwell sessions`)."),
    CommandDoc("tools", "::tools", "List the tools the model may use now, with their trust and approval."),
    CommandDoc("model", "::model [id]", "Show the model, or switch to another one (`PROVIDER:MODEL`)."),
    CommandDoc("trust", "::trust [level]",
               "Show or change the trust level: discovery, read_only, workspace, shell, full (a lens can still "
               "lower it)."),
    CommandDoc("undo", "::undo [--force]", "Undo the file changes of the last turn of this conversation."),
    CommandDoc("run", "::run <skill> [args]",
               "Run a skill of the active lens; args as a JSON object or `key=value` pairs."),
    CommandDoc("mcp", "::mcp",
               "List the MCP servers, their state (stopped, running, failed and why, awaiting approval) and tools."),
    CommandDoc("plan", "::plan",
               "Show the model's plan for the task at hand, as `update_plan` last set it in this conversation."),
    CommandDoc("exit", "::exit", "Leave the chat.", terminal_only=True),
)

CHAT_COMMANDS: tuple[CommandDoc, ...] = tuple(doc for doc in COMMAND_DOCS if not doc.terminal_only)
"""The commands every front end offers (what the sidecar serves and lens completion suggests)."""

"""docs/cli.md: the `sunwell` command, from its argparse parsers (sunwell.cli.arguments, and the sidecar's own in
sunwell.lsp.server), its exit codes (sunwell.cli.exit_codes) and the chat commands (sunwell.commands_spec)."""

from __future__ import annotations

import argparse

from docgen.markdown import BANNER, plain, table
from docgen.meanings import ARGUMENTS, EXITS, said
from sunwell.cli import exit_codes
from sunwell.cli.arguments import build_parser
from sunwell.commands_spec import COMMAND_DOCS
from sunwell.lsp.server import build_parser as build_serve_parser

INTRO = """\
# The command line

`sunwell COMMAND ...`; `sunwell --version` prints the version, `--debug` (before the command) shows tracebacks and
every library's debug log on stderr. A prompt may come on stdin instead of as an argument. Settings not given as
flags come from the config ([config.md](config.md)); with `--json`, `run` prints the event stream
([events.md](events.md)) and nothing else on stdout, and every other `--json` output is JSON in every case, an
empty list included.
"""

CHAT = """\
## Chat commands

A line that starts with `::name` is a command for Sunwell, not a message for the model, in `sunwell chat`, in VS
Code and as the prompt of `sunwell run` (`sunwell run "::context"`). An unknown one answers
`Unknown command: ::x. Try ::help`. Besides these, `::SERVER:PROMPT [name=value ...]` runs an MCP server's prompt
(a value with spaces in double quotes) and expands into the turn, and `@SERVER:URI` in a line attaches an MCP
server's resource.

"""


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser, str]]:
    """(name, parser, help) of each subcommand of `parser`, in the order declared."""
    for action in parser._actions:  # argparse keeps them nowhere public; sphinx-argparse reads them the same way
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            return [(name, sub, helps.get(name, "")) for name, sub in action.choices.items()]
    return []


def _argument(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{(action.metavar or action.dest).upper()}`" + (" ..." if action.nargs in ("+", "*") else "")
    takes = "" if action.nargs == 0 else f" {action.metavar or action.dest.upper()}"
    if action.choices and action.nargs != 0:
        takes = " " + "|".join(str(choice) for choice in action.choices)
    return ", ".join(f"`{option}{takes}`" for option in action.option_strings)


def _arguments(path: str, parser: argparse.ArgumentParser) -> str:
    rows = []
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        name = (action.option_strings or [action.dest])[0]
        meaning = said(ARGUMENTS, f"{path} {name}", "the argument", plain(action.help), shared=name)
        shown = action.default not in (None, False, argparse.SUPPRESS) and action.nargs != 0 and "default" not in meaning
        rows.append([_argument(action), meaning + (f" (default: `{action.default}`)" if shown else "")])
    return table(["argument", "meaning"], rows) if rows else ""


def _usage(path: str, parser: argparse.ArgumentParser) -> str:
    """`sunwell run [options] [PROMPT]`: written here, as argparse's own usage line differs between Pythons."""
    shown = [action for action in parser._actions
             if not isinstance(action, argparse._HelpAction) and action.help != argparse.SUPPRESS]
    words = [path] + (["[options]"] if any(action.option_strings for action in shown) else [])
    for action in shown:
        if isinstance(action, argparse._SubParsersAction):
            words.append("COMMAND ...")
        elif not action.option_strings:
            name = (action.metavar or action.dest).upper()
            words.append({"?": f"[{name}]", "*": f"[{name} ...]", "+": f"{name} ...",
                          argparse.REMAINDER: "..."}.get(action.nargs, name))
    return " ".join(words)


def _command(path: str, parser: argparse.ArgumentParser, about: str) -> list[str]:
    usage = _usage(path, parser)
    parts = [f"### `{path}`\n\n" + (f"{plain(about)[:1].upper()}{plain(about)[1:]}.\n\n" if about else "")
             + f"```\n{usage}\n```\n\n" + _arguments(path, parser)]
    for name, sub, help_ in _subcommands(parser):
        parts += _command(f"{path} {name}", sub, help_)
    return parts


def page() -> str:
    root = build_parser()
    commands = _subcommands(root)
    overview = table(["command", "what it does"], [[f"[`sunwell {name}`](#sunwell-{name})", plain(about)]
                                                    for name, _, about in commands])
    sections = []
    for name, sub, about in commands:
        sub = build_serve_parser() if name == "serve" else sub  # the sidecar parses its own options
        sections += _command(f"sunwell {name}", sub, about)
    codes = sorted((value, name) for name, value in vars(exit_codes).items() if name.startswith("EXIT_"))
    exits = table(["code", "when"], [[f"`{value}`", said(EXITS, name, "the exit code")] for value, name in codes])
    chat = table(["command", "what it does"], [[f"`{doc.usage}`", doc.description + (
        " (`sunwell chat` only)" if doc.terminal_only else "")] for doc in COMMAND_DOCS])
    parts = [BANNER, INTRO, "\n## Commands\n\n", overview, "\n", "\n".join(sections),
             "\n## Exit codes\n\n", exits, "\n", CHAT, chat]
    return "".join(parts).rstrip() + "\n"

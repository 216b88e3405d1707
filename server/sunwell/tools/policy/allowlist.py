"""The command allowlist: which shell commands run without asking (config `command_allowlist`).

A command is allowed only if bashlex parses it and EVERY simple command in it (through `&&`, `||`, `;`, `&`, pipes,
`( )` and `{ }`) matches an entry. An entry is one simple command made of plain words, `git status` or
`pytest -q`, matched word for word after quote removal, so `git "status"` is `git status` but `git status -s` is
not. An entry ending in ` *` (`pytest *`) also allows any further arguments: a prefix match on whole words, never on
characters (`git statusx` is not `git status *`). Give ` *` only to programs whose arguments cannot write or run
things (`git log --output=x` writes; `find -delete` deletes): the sandbox still applies, the allowlist is not it.

Always asked, whatever the entries say:
- every redirection except fd duplication or closing (`2>&1`, `>&2`, `2>&-`): `>`, `>>`, `>|`, `&>`, `<>`, even to
  /dev/null, and `<`, here-docs and here-strings too (an unquoted here-doc body is expanded, and bashlex does not
  look inside it);
- any expansion that makes a word unknowable before it runs: `$x`, `${...}`, `$(...)`, backticks, `<(...)`,
  `>(...)`, `$'...'`; a tilde is allowed (it expands the same way in the entry);
- variable assignments (`FOO=1 git status`), `eval`, `exec`, `source`, `.`, function definitions, `if`/`for`/
  `while`/`until`, arithmetic, control characters, and anything bashlex cannot parse (`case`, `[[`, arrays...);
- what bashlex reads differently from bash: a trailing backslash, a named fd (`{fd}>&1`), `!;`. The differential
  test in tests/tools/policy/test_allowlist.py runs what this module allows in real bash and checks the argv that ran.

Quote removal must not smuggle shell syntax: a word whose value holds anything but plain characters (`*`, `?`, `[`,
`{`, `~`, spaces...) matches an entry word only if it is also spelled the same, so `ls '*'` (a literal star) and
`ls *` (a glob) are different entries.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import bashlex

# The value of such a word means the same however it was quoted.
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_./:=,+@%-]*")
_PLAIN_TILDE = re.compile(r"~[A-Za-z0-9._-]*")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
RUNS_CODE = frozenset({"eval", "exec", "source", "."})
# Programs that run another command from their arguments: never allowed with ` *`.
COMMAND_RUNNERS = RUNS_CODE | {"bash", "sh", "zsh", "dash", "ksh", "fish", "env", "xargs", "sudo", "doas", "su",
                               "nohup", "nice", "timeout", "command", "builtin", "time", "watch", "setsid",
                               "stdbuf", "ssh", "python", "python3", "node", "perl", "ruby"}  # fmt: skip


@dataclass(frozen=True)
class Word:
    value: str
    """After quote removal."""
    source: str
    """As written."""

    def same_as(self, other: Word) -> bool:
        if self.value != other.value:
            return False
        return bool(_PLAIN_WORD.fullmatch(self.value)) or self.source == other.source


@dataclass(frozen=True)
class Entry:
    text: str
    words: tuple[Word, ...]
    more_args: bool
    """Entry ended in ` *`: any further arguments allowed."""

    def matches(self, words: Sequence[Word]) -> bool:
        n = len(self.words)
        if len(words) < n or (len(words) > n and not self.more_args):
            return False
        return all(a.same_as(b) for a, b in zip(words, self.words, strict=False))


class Refused(Exception):
    """Why a command needs approval."""


class CommandAllowlist:
    def __init__(self, entries: Sequence[str]) -> None:
        """Raises ValueError naming the first entry that is not a plain simple command."""
        self.entries = tuple(_parse_entry(text) for text in entries)

    def allows(self, command: str) -> bool:
        return not self.explain(command)

    def explain(self, command: str) -> str:
        """Why `command` needs approval, in one line; "" when the allowlist lets it run."""
        if not isinstance(command, str):
            return "the command is not a string"
        try:
            for words in simple_commands(command):
                if not any(entry.matches(words) for entry in self.entries):
                    shown = _shorten(" ".join(w.source for w in words))
                    raise Refused(f"`{shown}` is not in the command allowlist")
        except Refused as why:
            return str(why)
        return ""


def simple_commands(command: str) -> list[list[Word]]:
    """The words of every simple command in `command`; raises Refused when something in it always needs asking."""
    found: list[list[Word]] = []
    for tree in _parse(command):
        _walk(tree, command, found)
    if not found:
        raise Refused("no command found")
    return found


def _parse(command: str) -> list[bashlex.ast.node]:
    if not command.strip():
        raise Refused("empty command")
    if _CONTROL.search(command):
        raise Refused("control characters in the command")
    if re.search(r"(?<!\\)(\\\\)*\\\Z", command):
        raise Refused("a trailing backslash")  # bash runs it as a command named `\`; bashlex drops it
    if re.search(r"\{\w+\}[<>]", command):
        raise Refused("a named file descriptor")  # `{fd}>&1`: bashlex reads `{fd}` as an argument
    if "((" in command or "$[" in command:
        raise Refused("arithmetic is not looked into")  # bashlex reads `((x))` as two nested subshells
    try:
        trees = bashlex.parse(command)
    except bashlex.errors.ParsingError as exc:
        raise Refused(f"cannot be parsed: {exc}") from None
    except Exception:  # noqa: BLE001 - NotImplementedError (`case`, `time`), AttributeError (only a comment)...
        raise Refused("uses shell syntax the parser does not understand") from None
    return trees


def _walk(node: bashlex.ast.node, text: str, found: list[list[Word]]) -> None:
    kind = node.kind
    if kind in ("operator", "pipe"):
        return
    if kind == "reservedword":
        if node.word not in ("(", ")", "{", "}", "!"):
            raise Refused(f"`{node.word}` is not looked into")
        return
    if kind == "pipeline" and any(part.kind == "operator" for part in node.parts):
        raise Refused(f"unexpected `{_snippet(text, node)}`")  # bashlex reads `!;` as a pipeline of nothing
    if kind in ("list", "pipeline"):
        for part in node.parts:
            _walk(part, text, found)
    elif kind == "compound":
        for part in node.list:
            _walk(part, text, found)
        for redirect in getattr(node, "redirects", None) or ():
            _check_redirect(redirect, text)
    elif kind == "command":
        found.append(_command_words(node, text))
    else:  # if, for, while, until, function...
        raise Refused(f"`{kind}` is not looked into")


def _command_words(node: bashlex.ast.node, text: str) -> list[Word]:
    words: list[Word] = []
    for part in node.parts:
        if part.kind == "assignment":
            raise Refused(f"variable assignment `{_snippet(text, part)}`")
        if part.kind == "redirect":
            _check_redirect(part, text)
        elif part.kind == "word":
            _check_expansions(part, text)
            words.append(Word(part.word, text[part.pos[0]:part.pos[1]]))
        else:
            raise Refused(f"unexpected `{_snippet(text, part)}`")
    if not words:
        raise Refused("a command with no name")
    if words[0].value in RUNS_CODE:
        raise Refused(f"`{words[0].value}` runs arbitrary code")
    return words


def _check_expansions(word: bashlex.ast.node, text: str) -> None:
    for part in getattr(word, "parts", None) or ():
        if part.kind == "tilde" and not _PLAIN_TILDE.fullmatch(text[part.pos[0]:part.pos[1]]):
            raise Refused(f"an expansion after `~` in `{_snippet(text, part)}`")  # bashlex takes `~$(x)` as a tilde
        if part.kind != "tilde":
            what = {"parameter": "parameter expansion", "commandsubstitution": "command substitution",
                    "processsubstitution": "process substitution"}.get(part.kind, part.kind)  # fmt: skip
            raise Refused(f"{what} `{_snippet(text, part)}`")


def _check_redirect(redirect: bashlex.ast.node, text: str) -> None:
    # Only fd duplication or closing: `2>&1`, `>&2`, `<&0`, `2>&-`. `>& file` carries a word and writes a file.
    if redirect.type in (">&", "<&") and (isinstance(redirect.output, int) or redirect.output == "-"):
        return
    raise Refused(f"redirection `{_snippet(text, redirect)}`")


def _snippet(text: str, node: bashlex.ast.node) -> str:
    return _shorten(text[node.pos[0]:node.pos[1]])


def _shorten(text: str, limit: int = 60) -> str:
    """One line for a notice or a log: whitespace collapsed, long text cut."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _parse_entry(text: str) -> Entry:
    stripped = text.strip()
    more_args = stripped == "*" or stripped.endswith((" *", "\t*"))
    body = stripped[:-1] if more_args else stripped
    try:
        trees = _parse(body)
        if len(trees) != 1 or trees[0].kind != "command":
            raise Refused("not a single simple command")
        words = tuple(_command_words(trees[0], body))
    except Refused as why:
        raise ValueError(f"command_allowlist entry {text!r}: {why}; an entry is one plain command, "
                         "optionally ending in ' *'") from None  # fmt: skip
    if more_args and words[0].value in COMMAND_RUNNERS:
        raise ValueError(f"command_allowlist entry {text!r}: `{words[0].value}` runs other commands, so it may not "
                         "end in ' *'")  # fmt: skip
    return Entry(text, words, more_args)

"""Glob matching for list_files and search_files that takes time linear in the path, whatever the glob.

A glob used to become a Python regex, and `**` repeated a hundred times (or `{*,**}` a few dozen) backtracked for
hours inside one `re.match` that held the GIL. Here the glob becomes a small NFA that is run on all its states at
once (Thompson's construction), so a path costs at most (its length x the glob's size) steps. The sets of states
met are remembered with the set each character leads to (a DFA built lazily), so a usual glob costs one dict
lookup per character.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

MAX_GLOB_CHARS = 1_000
CACHE_ROOM = 200_000
"""Program states a glob may keep in the sets it remembers; past that, new sets are worked out on each use."""

Test = Callable[[str], bool]
Item = str | tuple  # ANY_NAME, ANY_PATH, ANY_DIRS, ("char", Test) or ("alt", (items, ...))
ANY_NAME, ANY_PATH, ANY_DIRS = "*", "**", "**/"  # [^/]*  .*  (?:.*/)?


def compile_glob(pattern: str) -> Glob:
    """A glob over posix paths: `*`, `?` and `[...]` stay within one name, `**` crosses directories (`**/*.py`
    matches `a.py` and `x/y/a.py`), `{a,b}` is either. Raises ValueError on an unclosed `[` or `{`, a bad
    character class, or a glob longer than MAX_GLOB_CHARS."""
    if len(pattern) > MAX_GLOB_CHARS:
        raise ValueError(f"the glob is {len(pattern):,} characters long; the limit is {MAX_GLOB_CHARS:,}")
    return Glob(_parse(pattern))


class Glob:
    """`match(path)` is true when the glob matches the whole path."""

    def __init__(self, items: list[Item]) -> None:
        # The program: ("char", test, next) consumes one character; ("split", targets) branches for free.
        self._program: list[tuple] = []
        _emit(items, self._program)
        self._final = len(self._program)
        self._known: dict[frozenset[int], _States] = {}
        self._room = CACHE_ROOM
        self._start = self._states(self._closure([0]))

    def match(self, path: str) -> bool:
        states = self._start
        for ch in path:
            states = states[ch]  # a dict lookup, or _States.__missing__ the first time
        return states.accepts

    def _step(self, states: _States, ch: str) -> _States:
        program = self._program
        following = self._states(
            self._closure(program[pc][2] for pc in states.pcs if pc != self._final and program[pc][1](ch))
        )
        if following.pcs in self._known:  # only remembered sets are linked, so memory stays within CACHE_ROOM
            states[ch] = following
        return following

    def _states(self, pcs: frozenset[int]) -> _States:
        states = self._known.get(pcs)
        if states is None:
            states = _States(self, pcs, self._final in pcs)
            if len(pcs) < self._room:
                self._room -= len(pcs) + 1
                self._known[pcs] = states
        return states

    def _closure(self, pcs: Iterable[int]) -> frozenset[int]:
        """The states reachable from `pcs` without consuming a character: character tests and the final state."""
        seen: set[int] = set()
        todo = list(pcs)
        while todo:
            pc = todo.pop()
            if pc in seen:
                continue
            seen.add(pc)
            if pc != self._final and self._program[pc][0] == "split":
                todo.extend(self._program[pc][1])
        return frozenset(pc for pc in seen if pc == self._final or self._program[pc][0] == "char")


class _States(dict):
    """A set of the program's states (a state of the equivalent DFA), mapping a character to the set that follows
    it; the mapping is filled in as characters are met."""

    __slots__ = ("accepts", "glob", "pcs")

    def __init__(self, glob: Glob, pcs: frozenset[int], accepts: bool) -> None:
        super().__init__()
        self.glob, self.pcs, self.accepts = glob, pcs, accepts

    def __missing__(self, ch: str) -> _States:
        return self.glob._step(self, ch)


def _parse(pattern: str) -> list[Item]:
    items: list[Item] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            items.append(ANY_DIRS)
            i += 3
            continue
        if pattern.startswith("**", i):
            items.append(ANY_PATH)
            i += 2
            continue
        if c == "*":
            items.append(ANY_NAME)
        elif c == "?":
            items.append(("char", _not_slash))
        elif c == "[":
            end = pattern.find("]", i + 2)  # a `]` right after `[` (or `[!`) is a member, as in fnmatch
            if pattern.startswith("[!", i) or pattern.startswith("[^", i):
                end = pattern.find("]", i + 3)
            if end < 0:
                raise ValueError(f"unclosed '[' in glob {pattern!r}")
            items.append(("char", _char_class(pattern[i + 1 : end], pattern)))
            i = end
        elif c == "{":
            end = pattern.find("}", i)  # the first `}` closes: braces do not nest
            if end < 0:
                raise ValueError(f"unclosed '{{' in glob {pattern!r}")
            items.append(("alt", tuple(_parse(alt) for alt in pattern[i + 1 : end].split(","))))
            i = end
        else:
            items.append(("char", c.__eq__))
        i += 1
    return items


def _char_class(given: str, pattern: str) -> Test:
    """One character of `[given]`: `!` or `^` first negates, and a negated class never matches `/`."""
    negate = given[:1] in ("!", "^")
    body = given[1:] if negate else given
    body = body.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
    try:
        regex = re.compile(f"[^/{body}]" if negate else f"[{body}]")  # one character: nothing to backtrack
    except re.error as exc:
        raise ValueError(f"bad character class [{given}] in glob {pattern!r}: {exc}") from None
    return lambda ch: regex.match(ch) is not None


def _not_slash(ch: str) -> bool:
    return ch != "/"


def _any(ch: str) -> bool:
    return True


def _emit(items: list[Item], program: list[tuple]) -> None:
    """Append the states for `items` to `program`; the last of them continues at len(program) afterwards."""
    for item in items:
        here = len(program)
        if item in (ANY_NAME, ANY_PATH):
            # Branch into the loop or past it; the loop takes one character and comes back here.
            program.append(("split", (here + 1, here + 2)))
            program.append(("char", _not_slash if item == ANY_NAME else _any, here))
        elif item == ANY_DIRS:  # optionally: any characters, then a `/`
            after = here + 4
            program.append(("split", (here + 1, after)))
            program.append(("split", (here + 2, here + 3)))
            program.append(("char", _any, here + 1))
            program.append(("char", "/".__eq__, after))
        elif item[0] == "alt":
            program.append(("split", ()))  # filled in below, once the alternatives' starts are known
            starts, exits = [], []
            for alternative in item[1]:
                starts.append(len(program))
                _emit(alternative, program)
                exits.append(len(program))
                program.append(("split", ()))
            program[here] = ("split", tuple(starts))
            for at in exits:
                program[at] = ("split", (len(program),))
        else:
            program.append(("char", item[1], here + 1))

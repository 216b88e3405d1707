"""Model text made safe to print in a terminal.

A model (or a file it read) can put escape sequences in a command, a file's content or its answer; printed raw they
would move the cursor, erase lines, retitle the window or reorder text, so that an approval prompt shows something
other than what will run; characters that hide text (Unicode tags, zero-width ones) would show nothing at all.
Everything the terminal shows from a model goes through `visible`. A module of its own, so
that a command that prints only stored text (`sunwell sessions list`) does not load the transcript's machinery.
"""

from __future__ import annotations

from sunwell.hidden_text import terminal_visible

visible = terminal_visible
"""`text` with every control character and every character that hides text written out as an escape (`\\x1b`, `\\r`,
`\\u202e`, `\\u200b`): the class of sunwell/hidden_text.py, and the carriage return."""

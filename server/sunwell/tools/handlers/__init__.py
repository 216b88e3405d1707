"""The core tools' handlers: files, edits, search, commands."""

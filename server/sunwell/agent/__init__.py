"""The engine: the tool loop, sessions and their event log, chat commands."""

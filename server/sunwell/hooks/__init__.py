"""Hooks (README "Hooks"): programs the user configures to run at four points of a turn — before a tool call
(`pre_tool`, which may deny it), after it (`post_tool`, which may annotate the result), at the end of a turn
(`turn_end`) and when a session starts (`session_start`) — each given the call as JSON on stdin.

A hook never widens: a `pre_tool` hook that lets a call go on hands it to policy (agent/gate.py), which still asks
what it would have asked. The user's own hooks run as the user; hooks a workspace config proposes run only once the
user approved that exact command, and then in the sandbox MCP servers run in (the workspace read-only, no network).
"""

from sunwell.hooks.catalog import EVENTS, HookEntry, hook_entries
from sunwell.hooks.points import Hooks, TurnHooks

__all__ = ["EVENTS", "HookEntry", "Hooks", "TurnHooks", "hook_entries"]

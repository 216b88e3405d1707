"""What cli/ and lsp/ use of the floors below the agent besides the engine, named once here so that no front end
imports tools/ (test_architecture): the audit log as `sunwell audit` reads it, the command sandbox `sunwell version`
reports, how a host rule is checked, what undo raises. The log filter is agent/logs.py, which the sidecar loads at
its start.
"""

from __future__ import annotations

from sunwell.tools.network.hosts import HostRules
from sunwell.tools.policy.audit import AuditLog, format_entry, parse_since
from sunwell.tools.sandbox.backend import find_sandbox, program_version
from sunwell.tools.workspace.checkpoints import UndoError

__all__ = ["AuditLog", "HostRules", "UndoError", "find_sandbox", "format_entry", "parse_since", "program_version"]

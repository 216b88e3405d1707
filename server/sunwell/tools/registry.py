"""The catalogue of core tools, and which of them a turn offers."""

from __future__ import annotations

from collections.abc import Sequence

from sunwell.tools.base import Tool, Trust
from sunwell.tools.handlers.arithmetic import MATH_EVAL
from sunwell.tools.handlers.builtins import GET_TIME, KV_GET, KV_SET
from sunwell.tools.handlers.code_intel import CODE_INTEL_TOOLS
from sunwell.tools.handlers.edits import EDIT_FILE, WRITE_FILE
from sunwell.tools.handlers.files import LIST_FILES, READ_FILE
from sunwell.tools.handlers.plan import UPDATE_PLAN
from sunwell.tools.handlers.processes import PROCESS_TOOLS
from sunwell.tools.handlers.questions import ASK_USER
from sunwell.tools.handlers.search import SEARCH_FILES
from sunwell.tools.handlers.shell import RUN_COMMAND
from sunwell.tools.handlers.subagent import TASK
from sunwell.tools.handlers.web import WEB_FETCH

CORE_TOOLS: tuple[Tool, ...] = (LIST_FILES, SEARCH_FILES, READ_FILE, WRITE_FILE, EDIT_FILE, RUN_COMMAND, WEB_FETCH,
                                UPDATE_PLAN, ASK_USER, TASK, GET_TIME, MATH_EVAL, KV_SET, KV_GET, *PROCESS_TOOLS,
                                *CODE_INTEL_TOOLS)
"""Every core tool; the code intelligence ones are offered only where an editor answers them (Engine.catalogue)."""

__all__ = ["CODE_INTEL_TOOLS", "CORE_TOOLS", "select_tools"]


def select_tools(tools: Sequence[Tool], trust: Trust, names: Sequence[str] | None = None) -> list[Tool]:
    """The tools allowed at `trust`, narrowed to `names` when given (an empty list means no tools), without the
    companions of a tool left out."""
    allowed = [tool for tool in tools if tool.min_trust <= trust and (names is None or tool.name in set(names))]
    offered = {tool.name for tool in allowed}
    return [tool for tool in allowed if tool.companion is None or tool.companion in offered]

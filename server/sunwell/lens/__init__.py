"""Lens files: a YAML format that packages instructions, skills and a tool policy, with editor features."""

from sunwell.lens.loader import Diagnostic, LensResult, Range, load_lens
from sunwell.lens.schema import Lens, Skill, ToolPolicy

__all__ = ["Diagnostic", "Lens", "LensResult", "Range", "Skill", "ToolPolicy", "load_lens"]

"""Print the `::command` grammar of `sunwell.commands_spec` as JSON, for scripts/gen-commands.mjs to turn into
extension/src/commands.generated.ts.

The grammar is declared once, in commands_spec.py (STYLE.md 3): the extension's chat input reads the names' patterns
and the command table from the generated file, never from a copy of its own. The patterns are Python regular
expressions written in the subset JavaScript and Oniguruma read the same (ASCII classes, no flags).
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "server"))

from sunwell import commands_spec


def build() -> dict[str, object]:
    return {
        "commandName": commands_spec.COMMAND_NAME,
        "promptName": commands_spec.PROMPT_NAME,
        "commands": [asdict(doc) for doc in commands_spec.COMMAND_DOCS],
    }


if __name__ == "__main__":
    json.dump(build(), sys.stdout, indent=1)
    sys.stdout.write("\n")

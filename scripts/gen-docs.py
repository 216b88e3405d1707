#!/usr/bin/env python3
"""Write Sunwell's reference, docs/*.md, from the code that defines it: the events and the sidecar's methods
(server/sunwell/wire/), the settings model (server/sunwell/config/settings.py), the command line's parsers
(server/sunwell/cli/arguments.py), the codes (server/sunwell/vocabulary.py). docs/README.md, the index, is
written by hand.

    python scripts/gen-docs.py            write the pages
    python scripts/gen-docs.py --check    exit 1, naming them, when the pages are not what the code says now

Like gen-protocol-types.py it imports the package from server/, no install needed (pygls and pydantic must be
importable). tests/test_docs.py runs `--check`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "server"), str(ROOT / "scripts")]
os.environ.pop("SUNWELL_LOG_LEVEL", None)  # `sunwell serve --log-level` takes its default from the environment

from docgen import cli, codes, config, events, sidecar
from docgen.meanings import PROBLEMS

PAGES = {"events.md": events.page, "sidecar.md": sidecar.page, "config.md": config.page, "cli.md": cli.page,
         "codes.md": codes.page}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write docs/*.md from the code.")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a page is stale")
    parser.add_argument("--out", type=Path, default=ROOT / "docs", help="the folder (default: docs/)")
    args = parser.parse_args(argv)
    pages = {name: build() for name, build in PAGES.items()}
    if PROBLEMS:
        print("gen-docs: " + "\n  ".join(PROBLEMS), file=sys.stderr)
        return 1
    stale = []
    for name, text in pages.items():
        path = args.out / name
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if stale:
        print(f"gen-docs: {', '.join(stale)} in {args.out} not what the code says now; run "
              "python scripts/gen-docs.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

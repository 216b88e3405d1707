"""docs/ is Sunwell's reference, generated from the code that defines it (scripts/gen-docs.py): it says what the code
says now, it names every event, method, key, command and code, and every place that cites it names a page and a
section that exist. The generator runs as a real subprocess, as a developer runs it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import get_args

from sunwell.cli.arguments import build_parser
from sunwell.config.settings import Settings
from sunwell.vocabulary import ErrorCode, NoticeCode
from sunwell.wire import events, protocol

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
GENERATE = [sys.executable, str(ROOT / "scripts" / "gen-docs.py")]
CITATION = re.compile(r'(?<![\w"\'/.])docs/(\w+\.md)(?: "([^"\n]+)")?')
"""`docs/events.md` or `docs/events.md "Rules of the stream"`; not a path in a string (`"docs/a.md"`, test data)."""
SOURCES = [*(ROOT / "server" / "sunwell").rglob("*.py"), *(ROOT / "extension" / "src").rglob("*.ts"),
           *(ROOT / "tests").rglob("*.py"), *(ROOT / "tests" / "e2e").rglob("*.mjs"), *(ROOT / "scripts").rglob("*.py"),
           ROOT / "README.md", *(ROOT / "syntaxes").glob("*.json")]


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def test_the_reference_is_what_the_code_says_now():
    run = subprocess.run([*GENERATE, "--check"], capture_output=True, text=True, cwd=ROOT, check=False)
    assert run.returncode == 0, run.stderr


def test_a_page_that_differs_from_the_code_is_named(tmp_path):
    subprocess.run([*GENERATE, "--out", str(tmp_path)], check=True, cwd=ROOT)
    assert (tmp_path / "events.md").read_text(encoding="utf-8") == page("events.md")
    stale = tmp_path / "config.md"
    stale.write_text(stale.read_text(encoding="utf-8").replace("| `max_tool_turns` | integer | 50 |", "| x |"))
    run = subprocess.run([*GENERATE, "--check", "--out", str(tmp_path)], capture_output=True, text=True, cwd=ROOT,
                         check=False)
    assert run.returncode == 1 and "config.md" in run.stderr and "events.md" not in run.stderr


def test_every_event_method_key_command_and_code_is_in_the_reference():
    kinds = get_args(get_args(events.Event)[0])
    assert all(f"### `{kind.model_fields['type'].default}`" in page("events.md") for kind in kinds)
    assert all(f"### `{method}`" in page("sidecar.md") for method in protocol.REQUESTS)
    assert all(f"| `{key}` |" in page("config.md") for key in Settings.model_fields)
    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    assert all(f"### `sunwell {name}`" in page("cli.md") for name in commands)
    assert all(f"| `{code}` |" in page("codes.md") for code in (*get_args(ErrorCode), *get_args(NoticeCode)))


def _headings(name: str) -> set[str]:
    return {line.lstrip("#").strip().replace("`", "") for line in page(name).splitlines() if line.startswith("#")}


def test_every_citation_names_a_page_and_a_section_that_exist():
    """The contract this was built to lives outside the repository: the code cites docs/, and what it cites is
    there (a page, and the heading a quoted section names)."""
    wrong = []
    for source in SOURCES:
        text, where = source.read_text(encoding="utf-8"), source.relative_to(ROOT)
        wrong += [f"{where} cites the contract outside the repository"] * ("PROTOCOL" + ".md" in text)
        for name, section in CITATION.findall(text):
            if not (DOCS / name).is_file() or (section and section not in _headings(name)):
                wrong.append(f"{where} cites docs/{name}" + (f' "{section}"' if section else ""))
    assert wrong == []

"""Where learned APIs live: one JSON file per API in `<data>/learned/NAME.json` (the user's data, so every workspace
sees them), holding what was learned — the operations as tools, the hosts, the security schemes, which tags are
offered — never a credential (tools/learned/credentials.py). The user config names each (`learned_apis`, written by
config/learned_entries.py) with its source and rate; a workspace config may not.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sunwell.tools.learned.document import Operation, Scheme

DEFAULT_RATE = 30
OFFER_LIMIT = 60
"""Above this many operations, learning asks which tags to offer (PokeAPI's fifty are all offered)."""


@dataclass
class LearnedApi:
    name: str
    source: str
    title: str
    version: str
    hosts: list[str]
    operations: list[Operation]
    schemes: list[Scheme] = field(default_factory=list)
    tags: list[str] | None = None
    """The tags whose operations are offered; None: all."""
    rate_per_min: int = DEFAULT_RATE
    digest: str = ""
    """sha256 of the document as read: re-learning an unchanged one changes nothing."""
    learned_at: str = ""
    hidden: str = ""
    """The characters that hide text the document held, removed as it was read (sunwell/hidden_text.py): said to
    the user when it is learned, never stored."""

    def offered(self) -> list[Operation]:
        if self.tags is None:
            return list(self.operations)
        wanted = set(self.tags)
        return [op for op in self.operations if wanted & set(op.tags or ("untagged",))]

    def tag_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for op in self.operations:
            for tag in op.tags or ("untagged",):
                counts[tag] = counts.get(tag, 0) + 1
        return counts

    def wire(self) -> dict[str, Any]:
        data = {**asdict(self), "operations": [op.wire() for op in self.operations]}
        del data["hidden"]
        return data

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> LearnedApi:
        return cls(**{**data, "operations": [Operation.from_wire(op) for op in data["operations"]],
                      "schemes": [Scheme(**scheme) for scheme in data.get("schemes", [])]})

    def summary(self) -> dict[str, Any]:
        """What `sunwell tools list --json` prints of it."""
        return {"name": self.name, "source": self.source, "title": self.title, "hosts": self.hosts,
                "operations": len(self.operations), "offered": len(self.offered()), "tags": self.tags,
                "rate_per_min": self.rate_per_min, "schemes": [scheme.name for scheme in self.schemes],
                "learned_at": self.learned_at}


class LearnedStore:
    def __init__(self, data_dir: Path) -> None:
        self.folder = data_dir / "learned"
        self._read: dict[str, tuple[int, LearnedApi]] = {}
        """By name: the file's mtime when read, and what it held (every turn's catalogue asks for them all)."""

    def path(self, name: str) -> Path:
        return self.folder / f"{name}.json"

    def names(self) -> list[str]:
        return sorted(path.stem for path in self.folder.glob("*.json")) if self.folder.is_dir() else []

    def get(self, name: str) -> LearnedApi | None:
        try:
            stamp = self.path(name).stat().st_mtime_ns
            kept = self._read.get(name)
            if kept is not None and kept[0] == stamp:
                return kept[1]
            api = LearnedApi.from_wire(json.loads(self.path(name).read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError, KeyError):
            return None
        self._read[name] = (stamp, api)
        return api

    def all(self) -> list[LearnedApi]:
        return [api for name in self.names() if (api := self.get(name)) is not None]

    def save(self, api: LearnedApi) -> None:
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary = self.path(api.name).with_suffix(".tmp")
        temporary.write_text(json.dumps(api.wire(), ensure_ascii=False), encoding="utf-8")
        os.replace(temporary, self.path(api.name))

    def forget(self, name: str) -> bool:
        try:
            self.path(name).unlink()
            return True
        except FileNotFoundError:
            return False

"""What a model taught Sunwell, kept across sessions (issue 47, RFC-136's learning loop): a small JSON table in the
data dir, keyed by the model string and the server's base URL.

A fact is learned where the session learned it: a server that refused `tools` was retried in emulation
(`tools_rejected`, then the next session starts emulated, in the format that worked, without the failed request);
calls the model wrote as text were recovered or repaired (`repairs`: what was done, how often). `capabilities_for`
layers what was learned over the registry's rules and under the user's overrides: an explicit override in config
always wins. `sunwell models MODEL` shows it; `sunwell models MODEL --forget` clears it.

The file is small and written whole, atomically (a temporary file in the same directory, then `os.replace`), so two
processes never leave half a table; the last writer's view of an entry wins.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sunwell.models.base import ModelRequest, Notice, Provider, StreamEvent
from sunwell.models.capabilities import Capabilities, capabilities_for

if TYPE_CHECKING:
    from sunwell.model_strings import ModelSpec
    from sunwell.models.factory import ProviderStack

FILE_NAME = "model_facts.json"
_VERSION = 1


def key(model: str, base_url: str | None) -> str:
    return f"{model} @ {base_url or 'default'}"


class ModelFacts:
    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / FILE_NAME

    def capabilities(self, spec: ModelSpec, base_url: str | None,
                     overrides: Mapping[str, Mapping[str, Any]]) -> Capabilities:
        """`spec`'s capabilities: the registry's, what was learned of it at `base_url`, the user's overrides."""
        learned = learned_capabilities(self.get(str(spec), base_url))
        return capabilities_for(spec.model, spec.provider, overrides, learned)

    def learner(self, model: str, base_url: str | None) -> Learner:
        return Learner(partial(self.learn, model, base_url))

    def get(self, model: str, base_url: str | None) -> dict[str, Any]:
        return dict(self._read().get(key(model, base_url), {}))

    def all_for(self, model: str) -> dict[str, dict[str, Any]]:
        """Every server's facts of `model`, by base URL."""
        prefix = f"{model} @ "
        return {k.removeprefix(prefix): v for k, v in self._read().items() if k.startswith(prefix)}

    def learn(self, model: str, base_url: str | None, **facts: Any) -> None:
        """Merges `facts` into what is known of `model` at `base_url` (`repairs` are counted up)."""
        table = self._read()
        entry = table.setdefault(key(model, base_url), {"model": model, "baseUrl": base_url})
        for name, value in facts.items():
            if name == "repairs":
                counts = entry.setdefault("repairs", {})
                for repair, n in value.items():
                    counts[repair] = counts.get(repair, 0) + n
            else:
                entry[name] = value
        entry["updatedAt"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self._write(table)

    def forget(self, model: str) -> int:
        """Clears what was learned of `model` on every server; how many entries went."""
        table = self._read()
        gone = [k for k in table if k.startswith(f"{model} @ ")]
        if gone:
            self._write({k: v for k, v in table.items() if k not in gone})
        return len(gone)

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # none yet, or unreadable: nothing learned (the next fact writes a good one)
        entries = data.get("models") if isinstance(data, dict) else None
        return {k: v for k, v in entries.items() if isinstance(v, dict)} if isinstance(entries, dict) else {}

    def _write(self, table: dict[str, dict[str, Any]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=".model_facts.", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump({"version": _VERSION, "models": table}, out, indent=1, ensure_ascii=False)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, self.path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise


def learned_capabilities(facts: dict[str, Any]) -> dict[str, Any]:
    """The capability values what was learned stands for (`capabilities_for`'s `learned`)."""
    values: dict[str, Any] = {}
    if facts.get("toolsRejected"):
        values["native_tools"] = False
        if facts.get("emulation"):
            values["emulation"] = facts["emulation"]
    if facts.get("repairs", {}).get("calls found in text"):
        values["recover_text_calls"] = True
    return values


class Learner:
    """What one model on one server teaches a turn's provider stack."""

    def __init__(self, learn: Callable[..., None]) -> None:
        self.learn = learn

    def fell_back(self, style: str, remember_for_session: Callable[[], None]) -> None:
        """The server refused `tools` and the request went through emulated, in `style`."""
        remember_for_session()
        self.learn(toolsRejected=True, emulation=style)

    def watching(self, stack: ProviderStack) -> ProviderStack:
        return replace(stack, turn=LearningProvider(stack.turn, self.learn))


class LearningProvider:
    """Passes a model's stream through and keeps what it taught: the repairs Sunwell made to read its calls."""

    def __init__(self, inner: Provider, learn: Any) -> None:
        self.inner, self.name, self._learn = inner, inner.name, learn

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        repairs: dict[str, int] = {}
        events = self.inner.stream(request)
        try:
            async for event in events:
                if isinstance(event, Notice) and (kind := _repair_kind(event)):
                    repairs[kind] = repairs.get(kind, 0) + 1
                yield event
        finally:
            # closed here, in order: left to the loop's finalizer, the inner stream is closed while still running
            if (aclose := getattr(events, "aclose", None)) is not None:
                await aclose()
            if repairs:
                self._learn(repairs=repairs)


def _repair_kind(notice: Notice) -> str | None:
    if notice.code == "tool_call_from_text":
        return "calls found in text"
    if notice.code != "tool_call_repaired":
        return None
    what = notice.message.split(": ", 1)[-1]
    return what.split(" (", 1)[0].strip()[:80] or None

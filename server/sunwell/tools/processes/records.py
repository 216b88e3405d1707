"""Background processes written down in the data dir while they run, so none is ever left running unseen.

Each running process has a file `<data>/processes/<owner pid>-<pid>.json`: its session, id, command, pid and start
time, and the same of the Sunwell that started it (the owner). It goes when the process ends. A Sunwell that died
without stopping its processes (killed, a crash, a power cut) leaves its files behind; the next Sunwell on the same
data dir finds them (`reap`), stops every process still running under a recorded pid and start time (a pid alone
may be someone else's by now), and reports each as `orphaned` to its session. A file whose owner still runs is
another Sunwell's (two `sunwell chat` in one workspace): left alone. Sandboxed processes die with Sunwell anyway
(bwrap's `--die-with-parent`); with `sandbox: off` this is what stops them.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from sunwell.tools.processes import procfs, stopping


@dataclass(frozen=True)
class Record:
    session: str
    id: int
    command: str
    pid: int
    started: int | None
    owner: int
    owner_started: int | None


class Records:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def add(self, session: str, process_id: int, command: str, pid: int) -> Record:
        me = os.getpid()
        record = Record(session, process_id, command, pid, procfs.start_time(pid), me, procfs.start_time(me))
        with contextlib.suppress(OSError):  # a data dir that cannot be written: the process still runs, unrecorded
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            temp = self._path(record).with_suffix(".tmp")
            temp.write_text(json.dumps(asdict(record)), encoding="utf-8")
            os.replace(temp, self._path(record))
        return record

    def remove(self, record: Record) -> None:
        with contextlib.suppress(OSError):
            self._path(record).unlink()

    def reap(self) -> list[Record]:
        """Stop the processes of dead Sunwells still running, and forget their files; the records found (stopped now,
        or gone already). Blocking (up to the grace per process): call it in a thread."""
        found = []
        for path in sorted(self.folder.glob("*.json")) if self.folder.is_dir() else []:
            try:
                record = Record(**json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError, TypeError):
                with contextlib.suppress(OSError):
                    path.unlink()  # unreadable: nothing can be done with it
                continue
            if stopping.alive(record.owner, record.owner_started):
                continue  # its Sunwell runs: its own to stop
            if stopping.alive(record.pid, record.started):
                stopping.end(record.pid, lambda r=record: not stopping.alive(r.pid, r.started))
            self.remove(record)
            found.append(record)
        return found

    def _path(self, record: Record) -> Path:
        return self.folder / f"{record.owner}-{record.pid}.json"

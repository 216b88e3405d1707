"""Background processes: commands that keep running after the call that started them (`run_command` with
`background`), read through a bounded ring, reached on their own ports, stopped with their session.

- ring.py: the output ring (the newest bytes, absolute offsets, what was dropped);
- handle.py: one process: started, read, watched for its ports and its end, stopped (stopping.py: tree and group);
- procfs.py: process trees, start times and listening sockets from /proc;
- forward.py and relay.py: a sandboxed process's ports reached through a relay, never on the host's TCP;
- records.py: the running processes written down in the data dir, so a dead Sunwell's are stopped by the next;
- table.py: every session's processes, the cap, their events, their end; matcher.py: `wait_for`'s regex, apart.
"""

from sunwell.tools.processes.handle import BackgroundProcess, Launch
from sunwell.tools.processes.table import ProcessTable, SessionProcesses

__all__ = ["BackgroundProcess", "Launch", "ProcessTable", "SessionProcesses"]

// The session's background processes, as the processes strip shows them: rows kept from the `process` events (in a
// turn and between turns: a server that exits while nothing runs) and from `sunwell/processes` (when a session is
// opened, after the engine restarted, and while any runs, for each one's latest lines). A row the user dismissed
// stays hidden; only an ended one can be dismissed.
import type { ProcessEvent, ProcessState } from '../../protocol';
import type { ChatState, LocalAction } from './model';

export interface ProcessView {
  processId: number;
  command: string;
  state: ProcessState;
  exitCode: number | null;
  ports: number[];
  /** Its latest whole lines, from the last `sunwell/processes` that asked for them; null before one did. */
  tail: string | null;
  /** Sandboxed without network: its ports are in a namespace of its own, which no browser here can open. */
  isolated: boolean;
  dismissed: boolean;
}

type ProcessAction = Extract<LocalAction, { type: 'processesListed' | 'processDismissed' }>;

/** A `process` event: the row of its process, made or brought up to date, when it is of the open session. */
export function reduceProcess(state: ChatState, ev: ProcessEvent): ChatState {
  // Before the sidecar named the session (the first turn's first event), a running turn's events are this chat's.
  const session = state.session ?? (state.turn ? ev.session : null);
  if (!session || ev.session !== session) return state;
  const old = state.processes.find((p) => p.processId === ev.processId);
  const row: ProcessView = { processId: ev.processId, command: ev.command, state: ev.state, exitCode: ev.exitCode,
    ports: ev.ports, tail: old?.tail ?? null, isolated: old?.isolated ?? false, dismissed: old?.dismissed ?? false };
  const rows = old ? state.processes.map((p) => (p === old ? row : p)) : [...state.processes, row];
  return { ...state, processes: rows };
}

export function reduceProcessAction(state: ChatState, action: ProcessAction): ChatState {
  switch (action.type) {
    case 'processesListed': {
      if (action.session !== state.session) return state;
      const rows = action.processes.map((p): ProcessView => {
        const old = state.processes.find((o) => o.processId === p.processId);
        return { processId: p.processId, command: p.command, state: p.state, exitCode: p.exitCode, ports: p.ports,
          tail: p.tail ?? old?.tail ?? null, isolated: p.isolated ?? false, dismissed: old?.dismissed ?? false };
      });
      // Listed again and again while a process runs: nothing changed, nothing to redraw.
      return JSON.stringify(rows) === JSON.stringify(state.processes) ? state : { ...state, processes: rows };
    }
    case 'processDismissed': {
      const row = state.processes.find((p) => p.processId === action.processId);
      if (!row || row.state === 'running' || row.dismissed) return state;
      return { ...state, processes: state.processes.map((p) => (p === row ? { ...p, dismissed: true } : p)) };
    }
  }
}

/** The rows the strip shows: running ones first, then by id; none dismissed. */
export function shownProcesses(state: ChatState): ProcessView[] {
  return state.processes.filter((p) => !p.dismissed)
    .sort((a, b) => Number(b.state === 'running') - Number(a.state === 'running') || a.processId - b.processId);
}

/** Whether the strip's "Open in browser" may open `port` of the process: it runs, here, and listens there. */
export function openablePort(state: ChatState, processId: number, port: number): boolean {
  const row = state.processes.find((p) => p.processId === processId);
  return !!row && row.state === 'running' && !row.isolated && row.ports.includes(port);
}

/** The last `count` lines of a tail as a terminal would show them: colours dropped, a line redrawn after `\r` as
 *  its last drawing (a progress bar). */
export function lastLines(tail: string | null, count = 3): string[] {
  const text = (tail ?? '').replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').replace(/\s+$/, '');
  return text ? text.split('\n').slice(-count).map((line) => line.split('\r').filter(Boolean).at(-1) ?? '') : [];
}

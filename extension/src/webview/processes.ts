// The processes strip, pinned above the input: one row per background process of the session (its command, state
// and ports, its latest lines), with Stop while it runs, Open in browser for each port, Dismiss once it ended.
// Drawn from the reducer's rows (common/state/processes.ts); the buttons are `data-action`s (userActions.ts).
import { lastLines, type ProcessView } from '../common/state';
import { h, icon } from './dom';

const STATE_ICONS = { running: 'circle-filled', exited: 'pass', stopped: 'circle-slash', orphaned: 'warning' } as const;

export function createProcessStrip(): HTMLElement {
  return h('section', { className: 'processes', 'data-testid': 'processes-strip', 'aria-label': 'Background processes', hidden: true });
}

export function drawProcesses(strip: HTMLElement, rows: readonly ProcessView[]): void {
  strip.hidden = rows.length === 0;
  const running = rows.filter((p) => p.state === 'running').length;
  const title = h('div', { className: 'processes-title' }, icon('server-process'),
    h('span', {}, running ? `Background processes · ${running} running` : 'Background processes'));
  strip.replaceChildren(...(rows.length ? [title, ...rows.map(drawRow)] : []));
  // the newest line in view when a long tail wraps past the box
  for (const tail of strip.querySelectorAll<HTMLElement>('.process-tail')) tail.scrollTop = tail.scrollHeight;
}

function drawRow(p: ProcessView): HTMLElement {
  const failed = p.state === 'exited' && p.exitCode !== 0;
  const head = h('div', { className: 'process-head' },
    icon(failed ? 'error' : STATE_ICONS[p.state], `process-icon ${p.state}${failed ? ' failed' : ''}`),
    h('code', { className: 'process-command', title: p.command }, p.command),
    p.state === 'running'
      ? h('button', { className: 'icon-button stop', 'data-action': 'processStop', 'data-testid': 'process-stop',
        title: `Stop process ${p.processId} (and what it started)`, 'aria-label': `Stop process ${p.processId}` }, icon('debug-stop'))
      : h('button', { className: 'icon-button', 'data-action': 'processDismiss', 'data-testid': 'process-dismiss',
        title: 'Dismiss', 'aria-label': `Dismiss process ${p.processId}` }, icon('close')));
  const ports = p.state === 'running' ? p.ports.map((port) => h('button', {
    className: 'link-button process-open', 'data-action': 'processOpen', 'data-testid': 'process-open',
    'data-port': String(port), disabled: p.isolated,
    title: p.isolated ? `Port ${port} is in the process's own sandbox without network: Sunwell's web_fetch reaches it, `
      + 'a browser here cannot (run it at trust full, or yourself, to open it)' : `Open http://127.0.0.1:${port}/ in the browser`,
  }, icon('link-external'), `:${port}`)) : [];
  const meta = h('div', { className: 'process-meta' },
    h('span', { className: 'process-id' }, `#${p.processId}`), h('span', { className: 'process-state' }, stateText(p)), ...ports);
  const lines = lastLines(p.tail);
  const tail = lines.length ? h('pre', { className: 'process-tail', 'data-testid': 'process-tail' }, lines.join('\n')) : null;
  return h('div', { className: `process ${p.state}`, 'data-testid': 'process-row', 'data-state': p.state,
    'data-process-id': String(p.processId) }, head, meta, tail);
}

function stateText(p: ProcessView): string {
  switch (p.state) {
    case 'running':
      return p.ports.length ? 'running on' : 'running';
    case 'exited':
      return `exited (${p.exitCode})`;
    case 'stopped':
      return p.exitCode === null ? 'stopped' : `stopped (${p.exitCode})`;
    case 'orphaned':
      return 'orphaned: Sunwell ended, so it was stopped';
  }
}

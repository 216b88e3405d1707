// The body of a pending approval card for the previews that need more than a line or two: a request to a web host,
// learning an API, a command's staged effects, and a preview kind this view does not know yet.
import type { EffectsPreview, FetchPreview, FileChange, LearnPreview, Preview } from '../protocol';
import { h, icon } from './dom';

/**
 * A request to a web host: the host first, as the server normalised it (IDNA), since allowing it for the session
 * allows that host; then the whole URL as text (never a link), wrapped, so nothing in it can pass for the host.
 */
export function renderFetch(preview: FetchPreview): HTMLElement[] {
  return [
    h('div', { className: 'approval-title' }, icon('globe'), ' Fetch from ', h('strong', { 'data-testid': 'approval-host' }, preview.host), '?'),
    h('pre', { className: 'approval-command', 'data-testid': 'approval-url', title: 'The whole URL' }, preview.url),
    h('div', { className: 'approval-cwd', 'data-testid': 'approval-risk' }, 'risk: ', h('code', {}, 'network'),
      ' · Sunwell requests this URL and gives the page to the model as data'),
  ];
}

/** Learning an API: the hosts its tools will call, then each tool as method and path (text, never links). */
export function renderLearn(preview: LearnPreview): HTMLElement[] {
  const changes = preview.changes
    ? Object.entries(preview.changes).filter(([, names]) => names.length).map(([kind, names]) => `${kind}: ${names.join(', ')}`)
    : null;
  return [
    h('div', { className: 'approval-title' }, icon('globe'), ' Learn the API ', h('strong', {}, preview.name), '?'),
    h('div', { className: 'approval-cwd', 'data-testid': 'approval-hosts' }, 'calls: ',
      h('strong', {}, preview.hosts.join(', ')), ` · ${preview.operations.length} tools`),
    h('pre', { className: 'approval-command', 'data-testid': 'approval-operations' },
      preview.operations.map((op) => `${op.method} ${op.path}  ${op.tool}${op.summary ? `  ${op.summary}` : ''}`).join('\n')),
    ...(changes ? [h('div', { className: 'approval-cwd', 'data-testid': 'approval-changes' },
      `changed since it was learned: ${changes.length ? changes.join('; ') : 'nothing'}`)] : []),
  ];
}

/** A preview kind left out of renderApproval's switch is a compile error (`never`); one from a newer sidecar shows as
 *  data, with the usual answers. */
export function unknownPreview(preview: never): HTMLElement[] {
  const raw = preview as Preview;
  return [
    h('div', { className: 'approval-title' }, icon('shield'), ` Allow this call (${String((raw as { kind?: unknown }).kind)})?`),
    h('pre', { className: 'approval-command' }, JSON.stringify(raw, null, 2)),
  ];
}

const CHANGE_BADGE: Record<FileChange['change'], [string, string]> = {
  added: ['A', 'Added'],
  modified: ['M', 'Modified'],
  deleted: ['D', 'Deleted'],
  mode: ['mode', 'Permissions changed'],
};

/**
 * A command that already ran in a staging overlay: what it changed (each file with a Show diff), its exit code and
 * its output (folded), for a decision on what it did rather than on what it says.
 */
export function renderEffects(preview: EffectsPreview): HTMLElement[] {
  const failed = preview.exitCode !== 0;
  const files = preview.changes.map((change) => {
    const [badge, label] = CHANGE_BADGE[change.change];
    return h('li', { className: 'effect-change', 'data-testid': 'effect-change', 'data-path': change.path, 'data-change': change.change },
      h('span', { className: `change-badge change-${change.change}`, title: label, 'data-testid': 'effect-badge' }, badge),
      h('code', { className: 'effect-path' }, change.path),
      change.binary
        ? h('span', { className: 'effect-binary' }, '(binary)')
        : change.change === 'mode' ? null
        : h('button', { className: 'link-button', 'data-action': 'showDiff', 'data-path': change.path, 'data-testid': 'effect-show-diff' },
          icon('diff'), ' Show diff'));
  });
  const lines = preview.output ? preview.output.replace(/\n$/, '').split('\n').length : 0;
  return [
    h('div', { className: 'approval-title' }, icon('shield'), ' Keep what this command did?'),
    h('pre', { className: 'approval-command', 'data-testid': 'approval-command' }, preview.command),
    h('div', { className: 'approval-cwd', 'data-testid': 'approval-cwd' }, 'ran sandboxed in ', h('code', {}, preview.cwd || '.'),
      ': nothing reaches the workspace unless you allow it · ',
      h('span', { className: `exit-code${failed ? ' failed' : ''}`, 'data-testid': 'effect-exit-code' }, `exit code ${preview.exitCode}`)),
    preview.changes.length
      ? h('ul', { className: 'effect-changes', 'data-testid': 'effect-changes' }, ...files,
        preview.truncated ? h('li', { className: 'effect-more', 'data-testid': 'effect-truncated' }, '… and more changes not listed') : null)
      : h('div', { className: 'effect-none', 'data-testid': 'effect-none' }, 'It changed no files.'),
    h('details', { className: 'effect-output', 'data-testid': 'effect-output' },
      h('summary', {}, lines ? `Output (${lines} line${lines === 1 ? '' : 's'})` : 'Output (none)'),
      h('pre', { className: 'tool-output' }, preview.output || '(no output)')),
  ];
}

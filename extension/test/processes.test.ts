// The processes strip: the rows a real engine's `process` events and `sunwell/processes` make, what it shows, and
// what the webview may ask of the host about them.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { JSDOM } from 'jsdom';
import { isWebviewMessage } from '../src/common/messages';
import {
  forStorage, lastLines, openablePort, reduce, replay, shownProcesses, type ChatState,
} from '../src/common/state';
import type { ProcessEvent, ProcessRow } from '../src/protocol';
import { createProcessStrip, drawProcesses } from '../src/webview/processes';
import { recorded, replayed, run, turn } from './helpers';

const events = recorded('background');
const processEvents = events.filter((e): e is ProcessEvent => e.type === 'process');
const session = events[0].session;
const outside = (ev: ProcessEvent, more: Partial<ProcessEvent>): ProcessEvent => ({ ...ev, turn: '', seq: 0, ...more });
const listed = (rows: Partial<ProcessRow>[], s = session) => ({ type: 'processesListed' as const, session: s,
  processes: rows.map((r) => ({ processId: 1, command: 'python3 -m http.server 8765', state: 'running' as const,
    exitCode: null, ports: [8765], started: '2026-01-01T00:00:00Z', isolated: false, ...r })) });
const finished = (): ChatState => turn('go', events);

describe('the processes strip: its rows', () => {
  it('follow the process events of a turn, the transcript untouched by them', () => {
    const running = turn('go', events.slice(0, events.indexOf(processEvents[0]) + 1));
    assert.deepEqual(shownProcesses(running).map((p) => [p.processId, p.state, p.exitCode]), [[1, 'running', null]]);
    assert.match(shownProcesses(running)[0].command, /^python3 -c/);
    const state = finished();
    assert.deepEqual(shownProcesses(state).map((p) => [p.processId, p.state, p.exitCode]), [[1, 'stopped', 143]]);
    assert.deepEqual(state.items.map((i) => i.kind), ['user', 'tool', 'tool', 'assistant', 'turnEnd']);
  });

  it('hear a process change between turns (no turn), of the open session only', () => {
    const started = turn('go', events.filter((e) => e !== processEvents[1]));
    assert.equal(started.turn, null);
    const exited = reduce(started, outside(processEvents[0], { state: 'exited', exitCode: 0 }));
    assert.deepEqual(shownProcesses(exited).map((p) => [p.state, p.exitCode]), [['exited', 0]]);
    const other = reduce(started, outside(processEvents[0], { session: 'another', state: 'exited', exitCode: 0 }));
    assert.equal(other, started);
    assert.equal(reduce(run([]), outside(processEvents[0], {})).processes.length, 0, 'no session open: no row');
  });

  it('come from sunwell/processes with their tails; an unchanged listing changes nothing', () => {
    const state = reduce(finished(), listed([{ processId: 2, tail: 'Serving HTTP on 0.0.0.0 port 8765\n', isolated: true },
      { processId: 1, state: 'stopped', exitCode: 143, ports: [] }]));
    assert.deepEqual(shownProcesses(state).map((p) => [p.processId, p.state, p.isolated]), [[2, 'running', true], [1, 'stopped', false]]);
    assert.deepEqual(lastLines(shownProcesses(state)[0].tail), ['Serving HTTP on 0.0.0.0 port 8765']);
    assert.equal(reduce(state, listed([{ processId: 2, tail: 'Serving HTTP on 0.0.0.0 port 8765\n', isolated: true },
      { processId: 1, state: 'stopped', exitCode: 143, ports: [] }])), state);
    assert.equal(reduce(state, listed([], 'another')), state, 'another session\'s listing');
    const event = reduce(state, outside(processEvents[0], { processId: 2, state: 'exited', exitCode: 1, ports: [] }));
    assert.equal(event.processes.find((p) => p.processId === 2)?.tail, 'Serving HTTP on 0.0.0.0 port 8765\n',
      'an event keeps the last tail');
  });

  it('orders running ones first; an ended one can be dismissed for good, a running one cannot', () => {
    let state = reduce(finished(), listed([{ processId: 1, state: 'exited', exitCode: 0, ports: [] }, { processId: 2 },
      { processId: 3, state: 'orphaned', ports: [] }]));
    assert.deepEqual(shownProcesses(state).map((p) => p.processId), [2, 1, 3]);
    assert.equal(reduce(state, { type: 'processDismissed', processId: 2 }), state);
    state = reduce(state, { type: 'processDismissed', processId: 1 });
    assert.deepEqual(shownProcesses(state).map((p) => p.processId), [2, 3]);
    state = reduce(state, listed([{ processId: 1, state: 'exited', exitCode: 0, ports: [] }, { processId: 2 }]));
    assert.deepEqual(shownProcesses(state).map((p) => p.processId), [2], 'listed again, still dismissed');
  });

  it('belong to the session: gone with New Session, with another session opened, and from storage', () => {
    const state = reduce(finished(), listed([{}]));
    assert.equal(reduce(state, { type: 'newSession' }).processes.length, 0);
    assert.equal(forStorage(state).processes.length, 0);
    // a stored session's replay shows no row from what its processes did then: sunwell/processes tells what is now
    const opened = replay(state, session, replayed('background'));
    assert.ok(replayed('background').some((e) => e.type === 'process'));
    assert.equal(opened.processes.length, 0);
    assert.equal(opened.items.filter((i) => i.kind === 'tool').length, 2);
  });

  it('let the host open only a port a running process of the session listens on, here', () => {
    const state = reduce(finished(), listed([{ processId: 1 }, { processId: 2, ports: [9000], isolated: true },
      { processId: 3, state: 'stopped', ports: [7000] }]));
    assert.equal(openablePort(state, 1, 8765), true);
    assert.equal(openablePort(state, 1, 22), false);
    assert.equal(openablePort(state, 2, 9000), false, 'isolated: its port is not on this machine');
    assert.equal(openablePort(state, 3, 7000), false);
    assert.equal(openablePort(state, 9, 8765), false);
  });
});

describe('the processes strip: its tail', () => {
  it('shows the last lines as a terminal would', () => {
    assert.deepEqual(lastLines('a\nb\nc\nd\n'), ['b', 'c', 'd']);
    assert.deepEqual(lastLines('\x1b[32mready\x1b[0m on http://localhost:5173\n'), ['ready on http://localhost:5173']);
    assert.deepEqual(lastLines('building 10%\rbuilding 50%\rbuilding 100%\n'), ['building 100%']);
    assert.deepEqual(lastLines(null), []);
    assert.deepEqual(lastLines('\n\n'), []);
  });
});

describe('the processes strip: messages from the webview', () => {
  it('take a process id (and a port) as numbers', () => {
    assert.equal(isWebviewMessage({ type: 'processStop', processId: 1 }), true);
    assert.equal(isWebviewMessage({ type: 'processStop', processId: '1' }), false);
    assert.equal(isWebviewMessage({ type: 'processStop', processId: -1 }), false);
    assert.equal(isWebviewMessage({ type: 'processOpen', processId: 1, port: 8765 }), true);
    assert.equal(isWebviewMessage({ type: 'processOpen', processId: 1, port: 70000 }), false);
    assert.equal(isWebviewMessage({ type: 'processOpen', processId: 1 }), false);
    assert.equal(isWebviewMessage({ type: 'processDismiss', processId: 2 }), true);
  });
});

describe('the processes strip: drawn', () => {
  before(() => {
    (globalThis as { document?: Document }).document = new JSDOM('<!DOCTYPE html><body></body>').window.document;
  });

  it('is hidden without rows; each row has its state, ports, tail and the buttons its state allows', () => {
    const strip = createProcessStrip();
    drawProcesses(strip, []);
    assert.equal(strip.hidden, true);
    const state = reduce(finished(), listed([{ processId: 1, state: 'exited', exitCode: 0, ports: [] },
      { processId: 2, tail: 'one\ntwo\n<b>three</b>\n' }, { processId: 3, ports: [9000], isolated: true }]));
    drawProcesses(strip, shownProcesses(state));
    assert.equal(strip.hidden, false);
    assert.equal(strip.dataset.testid, 'processes-strip');
    const rows = [...strip.querySelectorAll<HTMLElement>('[data-testid="process-row"]')];
    assert.deepEqual(rows.map((r) => [r.dataset.processId, r.dataset.state]), [['2', 'running'], ['3', 'running'], ['1', 'exited']]);
    const [server, isolated, ended] = rows;
    assert.match(server.textContent ?? '', /python3 -m http\.server 8765/);
    assert.equal(server.querySelector('[data-testid="process-tail"]')?.textContent, 'one\ntwo\n<b>three</b>');
    assert.equal(server.querySelector('b'), null, 'the tail is text');
    const open = server.querySelector<HTMLElement>('[data-testid="process-open"]');
    assert.equal(open?.dataset.port, '8765');
    assert.equal(open?.hasAttribute('disabled'), false);
    assert.ok(server.querySelector('[data-testid="process-stop"]'));
    assert.equal(isolated.querySelector('[data-testid="process-open"]')?.hasAttribute('disabled'), true);
    assert.match(isolated.querySelector<HTMLElement>('[data-testid="process-open"]')?.title ?? '', /network/);
    assert.equal(ended.querySelector('[data-testid="process-stop"]'), null);
    assert.equal(ended.querySelector('[data-testid="process-open"]'), null);
    assert.ok(ended.querySelector('[data-testid="process-dismiss"]'));
    assert.match(ended.textContent ?? '', /exited \(0\)/);
  });
});

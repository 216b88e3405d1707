// Which sidecar events are the open chat's: its own turn's, never those of a turn it left.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ChatTurns } from '../src/common/turns';

describe('ChatTurns', () => {
  it('listens while the chat\'s own turn runs, and stops when it ends', () => {
    const turns = new ChatTurns();
    assert.equal(turns.listening, false);
    const turn = turns.begin(() => undefined);
    assert.equal(turns.listening, true);
    turns.end(turn);
    assert.equal(turns.listening, false);
    assert.equal(turns.running, false);
  });

  it('Stop cancels the turn and keeps it the chat\'s', () => {
    const turns = new ChatTurns();
    let cancelled = 0;
    const turn = turns.begin(() => cancelled++);
    assert.equal(turns.stop(), true);
    assert.equal(cancelled, 1);
    assert.equal(turn.left, false);
    assert.equal(turns.listening, true);
  });

  it('a left turn is cancelled and disowned; the next turn listens only once the left one has answered', async () => {
    const turns = new ChatTurns();
    let cancelled = 0;
    const old = turns.begin(() => cancelled++);
    turns.leave();
    assert.equal(cancelled, 1);
    assert.equal(old.left, true);
    assert.equal(turns.running, false);
    const next = turns.begin(() => undefined);
    assert.equal(turns.listening, false, 'the left turn may still be sending');
    let quiet = false;
    const waiting = turns.quiet().then(() => (quiet = true));
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(quiet, false);
    turns.end(old);
    await waiting;
    assert.equal(turns.listening, true);
    assert.equal(next.left, false);
  });

  it('a new turn leaves the one before; a left turn that never answers is given up on', async () => {
    const turns = new ChatTurns();
    const old = turns.begin(() => undefined);
    turns.begin(() => undefined);
    assert.equal(old.left, true);
    await turns.quiet(20);
    assert.equal(turns.listening, true);
  });
});

describe('ChatTurns.detach (a worktree session goes on in the background)', () => {
  it('a detached turn is not cancelled, is no longer the chat\'s, and does not hold the next turn back', async () => {
    const turns = new ChatTurns();
    let cancelled = 0;
    const old = turns.begin(() => cancelled++);
    assert.equal(turns.detach(), old);
    assert.equal(cancelled, 0, 'a worktree session runs on when the chat leaves it');
    assert.equal(old.left, true);
    assert.equal(turns.running, false);
    turns.begin(() => undefined);
    assert.equal(turns.listening, true, 'its events are told apart by session, not by waiting for it');
    await turns.quiet(10_000); // resolves at once: nothing is leaving
  });

  it('detaching with no turn running gives nothing', () => {
    assert.equal(new ChatTurns().detach(), undefined);
  });
});

// How the "Sunwell: MCP Servers" picker shows each server.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canRestart, mcpServerItem, stateWord } from '../src/common/mcp';

describe('MCP servers picker', () => {
  it('shows a running server with its tool count and transport', () => {
    const item = mcpServerItem({ name: 'box', state: 'running', transport: 'stdio', tools: ['box__echo', 'box__add'] });
    assert.deepEqual(item, { label: '$(pass-filled) box', description: 'running · stdio · 2 tools', detail: undefined });
    assert.equal(mcpServerItem({ name: 'one', state: 'running', transport: 'http', tools: ['one__x'] }).description, 'running · http · 1 tool');
  });

  it('puts why a server failed on its own line and still offers Restart', () => {
    const failed = { name: 'bad', state: 'failed: exited while starting', transport: 'stdio' as const, tools: [] };
    assert.equal(stateWord(failed.state), 'failed');
    assert.deepEqual(mcpServerItem(failed), { label: '$(error) bad', description: 'failed · stdio', detail: 'exited while starting' });
    assert.ok(canRestart(failed));
  });

  it('tells how to approve a proposal instead of offering Restart', () => {
    const waiting = { name: 'theirs', state: 'awaiting approval', transport: 'stdio' as const, tools: [] };
    assert.match(mcpServerItem(waiting).detail!, /sunwell mcp approve theirs/);
    assert.equal(mcpServerItem(waiting).label, '$(shield) theirs');
    assert.ok(!canRestart(waiting));
    assert.equal(mcpServerItem({ name: 'idle', state: 'stopped', transport: 'stdio', tools: [] }).description, 'stopped · stdio');
  });
});

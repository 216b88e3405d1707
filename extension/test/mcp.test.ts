// How the "Sunwell: MCP Servers" picker shows each server.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canRestart, mcpServerItem, stateWord, withMcpServersKey } from '../src/common/mcp';

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

describe('no MCP server configured (issue 34 item 12)', () => {
  it('opens the user config at mcp_servers, adding a commented example only when the key is missing', () => {
    const empty = withMcpServersKey('');
    assert.equal(empty.line, 0);
    assert.match(empty.text, /^mcp_servers:\n  # docs:/);
    const other = withMcpServersKey('model: openai:gpt-4o');
    assert.ok(other.text.startsWith('model: openai:gpt-4o\n\nmcp_servers:\n'));
    assert.equal(other.text.split('\n')[other.line], 'mcp_servers:');
    const has = 'model: x\nmcp_servers: {}\n';
    assert.deepEqual(withMcpServersKey(has), { text: has, line: 1 });
  });
});

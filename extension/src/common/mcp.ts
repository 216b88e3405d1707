// How the "Sunwell: MCP Servers" picker shows a server: pure, so it is tested without VS Code.
import type { McpServerInfo } from '../protocol';

export interface McpServerItem {
  label: string;
  description: string;
  detail?: string;
}

const ICONS: Record<string, string> = {
  running: '$(pass-filled)',
  starting: '$(loading~spin)',
  stopped: '$(circle-outline)',
  'awaiting approval': '$(shield)',
};

/** The state's word (`failed` for `failed: REASON`): what decides the icon and whether Restart is offered. */
export function stateWord(state: string): string {
  return state.startsWith('failed') ? 'failed' : state;
}

export function mcpServerItem(server: McpServerInfo): McpServerItem {
  const word = stateWord(server.state);
  const count = server.tools.length;
  const tools = word === 'running' || count ? `${count} tool${count === 1 ? '' : 's'}` : '';
  const reason = word === 'failed' ? server.state.slice('failed:'.length).trim() : '';
  return {
    label: `${ICONS[word] ?? '$(error)'} ${server.name}`,
    description: [word, server.transport, tools].filter(Boolean).join(' · '),
    detail: reason || (word === 'awaiting approval' ? `proposed by the workspace: sunwell mcp approve ${server.name}` : undefined),
  };
}

/** A proposal waiting for approval is not restarted (approving it is the user's own step, in a terminal). */
export function canRestart(server: McpServerInfo): boolean {
  return stateWord(server.state) !== 'awaiting approval';
}

/** A url server may hold an OAuth sign-in: Sign Out forgets it. */
export function canSignOut(server: McpServerInfo): boolean {
  return server.transport === 'http';
}

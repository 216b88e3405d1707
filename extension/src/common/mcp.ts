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

const EXAMPLE = [
  'mcp_servers:',
  '  # docs:                       # a server Sunwell starts (stdio); see the README, "MCP servers"',
  '  #   command: npx',
  '  #   args: ["-y", "@modelcontextprotocol/server-filesystem", "."]',
  '  # tracker:                    # a server that runs elsewhere (streamable HTTP)',
  '  #   url: https://mcp.example.com/mcp',
];

/**
 * The user config with an `mcp_servers:` key to add a server under (a commented example appended when it has
 * none), and the key's line: where "MCP Servers" opens the file when no server is configured. Nothing already in
 * the file is changed.
 */
export function withMcpServersKey(text: string): { text: string; line: number } {
  const lines = text.split('\n');
  const found = lines.findIndex((l) => /^mcp_servers\s*:/.test(l));
  if (found >= 0) return { text, line: found };
  const base = text === '' || text.endsWith('\n') ? text : `${text}\n`;
  const gap = base === '' ? '' : '\n';
  return { text: `${base}${gap}${EXAMPLE.join('\n')}\n`, line: base.split('\n').length - 1 + (gap ? 1 : 0) };
}

/** A url server may hold an OAuth sign-in: Sign Out forgets it. */
export function canSignOut(server: McpServerInfo): boolean {
  return server.transport === 'http';
}

// "Sunwell: MCP Servers": the configured MCP servers with their state and tools; choosing one offers Restart.
import * as vscode from 'vscode';
import { canRestart, mcpServerItem } from './common/mcp';
import type { McpServerInfo } from './protocol';
import type { Sidecar } from './sidecar';

export async function showMcpServers(sidecar: Sidecar): Promise<void> {
  try {
    const { servers } = await sidecar.request('sunwell/mcp', {});
    const chosen = await vscode.window.showQuickPick(
      servers.map((server) => ({ ...mcpServerItem(server), server })),
      { title: 'Sunwell: MCP Servers', placeHolder: servers.length ? 'Choose a server to restart it'
        : 'No MCP servers configured (mcp_servers in your user config; see the README)' },
    );
    if (chosen) await offerRestart(sidecar, chosen.server);
  } catch (err) {
    void vscode.window.showErrorMessage(`Sunwell: ${(err as Error).message ?? err}`);
  }
}

async function offerRestart(sidecar: Sidecar, server: McpServerInfo): Promise<void> {
  if (!canRestart(server)) {
    void vscode.window.showInformationMessage(`Sunwell: ${server.name} waits for your approval: run \`sunwell mcp approve ${server.name}\`.`);
    return;
  }
  const action = await vscode.window.showQuickPick([{ label: '$(debug-restart) Restart', restart: true }],
    { title: `MCP server ${server.name}: ${server.state}` });
  if (!action) return;
  const { state } = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Restarting the MCP server ${server.name}…` },
    () => sidecar.request('sunwell/mcpRestart', { name: server.name }),
  );
  const show = state === 'running' ? vscode.window.showInformationMessage : vscode.window.showWarningMessage;
  void show(`Sunwell: MCP server ${server.name} is ${state}.`);
}

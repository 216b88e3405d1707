// "Sunwell: MCP Servers": the configured MCP servers with their state and tools; choosing one offers Restart, and
// Sign Out for a url server (its OAuth sign-in, kept in SecretStorage, is forgotten).
import * as vscode from 'vscode';
import { canRestart, canSignOut, mcpServerItem } from './common/mcp';
import type { McpServerInfo } from './protocol';
import type { Sidecar } from './sidecar';

export async function showMcpServers(sidecar: Sidecar): Promise<void> {
  try {
    const { servers } = await sidecar.request('sunwell/mcp', {});
    const chosen = await vscode.window.showQuickPick(
      servers.map((server) => ({ ...mcpServerItem(server), server })),
      { title: 'Sunwell: MCP Servers', placeHolder: servers.length ? 'Choose a server to restart it or sign out'
        : 'No MCP servers configured (mcp_servers in your user config; see the README)' },
    );
    if (chosen) await offerActions(sidecar, chosen.server);
  } catch (err) {
    void vscode.window.showErrorMessage(`Sunwell: ${(err as Error).message ?? err}`);
  }
}

async function offerActions(sidecar: Sidecar, server: McpServerInfo): Promise<void> {
  if (!canRestart(server)) {
    void vscode.window.showInformationMessage(`Sunwell: ${server.name} waits for your approval: run \`sunwell mcp approve ${server.name}\`.`);
    return;
  }
  const actions = [
    { label: '$(debug-restart) Restart', action: 'restart' as const },
    ...(canSignOut(server) ? [{ label: '$(sign-out) Sign Out', detail: 'Forget its OAuth sign-in; the next use signs in again', action: 'signOut' as const }] : []),
  ];
  const chosen = await vscode.window.showQuickPick(actions, { title: `MCP server ${server.name}: ${server.state}` });
  if (chosen?.action === 'restart') await restart(sidecar, server);
  if (chosen?.action === 'signOut') await signOut(sidecar, server);
}

async function restart(sidecar: Sidecar, server: McpServerInfo): Promise<void> {
  const { state } = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Restarting the MCP server ${server.name}…` },
    () => sidecar.request('sunwell/mcpRestart', { name: server.name }),
  );
  const show = state === 'running' ? vscode.window.showInformationMessage : vscode.window.showWarningMessage;
  void show(`Sunwell: MCP server ${server.name} is ${state}.`);
}

async function signOut(sidecar: Sidecar, server: McpServerInfo): Promise<void> {
  const { forgotten } = await sidecar.request('sunwell/mcpSignOut', { name: server.name });
  void vscode.window.showInformationMessage(forgotten
    ? `Sunwell: signed out of the MCP server ${server.name}.`
    : `Sunwell: no sign-in was kept for the MCP server ${server.name}.`);
}

// "Sunwell: MCP Servers": the configured MCP servers with their state and tools; choosing one offers Restart, and
// Sign Out for a url server (its OAuth sign-in, kept in SecretStorage, is forgotten). With none, it says how to add
// one and opens the user config there.
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { canRestart, canSignOut, mcpServerItem, withMcpServersKey } from './common/mcp';
import type { McpServerInfo } from './protocol';
import type { Sidecar } from './sidecar';

export async function showMcpServers(sidecar: Sidecar): Promise<void> {
  try {
    const { servers, config } = await sidecar.request('sunwell/mcp', {});
    if (servers.length === 0) {
      // Not an empty picker, which looks like a search box: say what to do, and take the user there.
      const open = config ? 'Open User Config' : undefined;
      const action = await vscode.window.showInformationMessage(
        'Sunwell: no MCP servers are configured. Add one under `mcp_servers` in your Sunwell user config.',
        ...(open ? [open] : []));
      if (action && config) await openAtMcpServers(config);
      return;
    }
    const chosen = await vscode.window.showQuickPick(
      servers.map((server) => ({ ...mcpServerItem(server), server })),
      { title: 'Sunwell: MCP Servers', placeHolder: 'Choose a server to restart it or sign out' },
    );
    if (chosen) await offerActions(sidecar, chosen.server);
  } catch (err) {
    void vscode.window.showErrorMessage(`Sunwell: ${(err as Error).message ?? err}`);
  }
}

/** Opens the user config with the cursor on `mcp_servers:` (the key and a commented example added if missing). */
async function openAtMcpServers(file: string): Promise<void> {
  const before = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  const { text, line } = withMcpServersKey(before);
  if (text !== before) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, text);
  }
  const editor = await vscode.window.showTextDocument(vscode.Uri.file(file));
  const at = new vscode.Position(line, 'mcp_servers:'.length);
  editor.selection = new vscode.Selection(at, at);
  editor.revealRange(new vscode.Range(at, at), vscode.TextEditorRevealType.InCenter);
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

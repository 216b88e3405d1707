// Where a Sunwell setting is read, and so where it is shown and written. A machine-scoped one (trust, interpreter,
// endpoints) is never read from a workspace, and in a remote window (code-server, Remote-SSH, a dev container) it
// is read from the Remote settings only: the User tab there does not even list it.
import * as vscode from 'vscode';

interface Manifest {
  contributes?: { configuration?: { properties?: Record<string, { scope?: string }> } };
}

/** `key` without the `sunwell.` prefix, as `getConfiguration('sunwell')` takes it. */
export function machineScoped(key: string): boolean {
  const manifest = vscode.extensions.getExtension('sunwell.sunwell')?.packageJSON as Manifest | undefined;
  const scope = manifest?.contributes?.configuration?.properties?.[`sunwell.${key}`]?.scope;
  return scope === 'machine' || scope === 'machine-overridable';
}

/** Opens the Settings UI at `fullKey` (`sunwell.baseUrl`) on the tab that lists it. */
export async function openSetting(fullKey: string): Promise<void> {
  const remote = vscode.env.remoteName !== undefined && machineScoped(fullKey.replace(/^sunwell\./, ''));
  // the options object: openRemoteSettings ignores a plain string
  await vscode.commands.executeCommand(remote ? 'workbench.action.openRemoteSettings' : 'workbench.action.openSettings', { query: fullKey });
}

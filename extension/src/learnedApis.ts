// "Sunwell: Learned APIs": the APIs learned from OpenAPI documents, their tools and hosts; choosing one offers
// to set each of its credentials (kept in VS Code's secret storage) or to Forget it.
import * as vscode from 'vscode';
import { learnedApiItem } from './common/learned';
import type { LearnedApiInfo } from './protocol';
import type { ApiKeyStore } from './secrets';
import type { Sidecar } from './sidecar';

export async function showLearnedApis(sidecar: Sidecar, keys: ApiKeyStore): Promise<void> {
  try {
    const { apis } = await sidecar.request('sunwell/learnedApis', {});
    const credentials = await keys.learned();
    const chosen = await vscode.window.showQuickPick(
      apis.map((api) => ({ ...learnedApiItem(api, credentials), api })),
      { title: 'Sunwell: Learned APIs', placeHolder: apis.length ? 'Choose an API to set its credentials or forget it'
        : 'No learned APIs: ask Sunwell to learn one (learn_api), or run `sunwell tools learn SOURCE --name NAME`' },
    );
    if (chosen) await offerActions(sidecar, keys, chosen.api);
  } catch (err) {
    void vscode.window.showErrorMessage(`Sunwell: ${(err as Error).message ?? err}`);
  }
}

async function offerActions(sidecar: Sidecar, keys: ApiKeyStore, api: LearnedApiInfo): Promise<void> {
  const actions = [
    ...api.schemes.map((scheme) => ({ label: `$(key) Set the credential ${scheme}`, scheme, forget: false })),
    { label: '$(trash) Forget', scheme: '', forget: true },
  ];
  const action = await vscode.window.showQuickPick(actions, { title: `Learned API ${api.name}` });
  if (!action) return;
  if (action.forget) {
    const sure = await vscode.window.showWarningMessage(`Forget the API ${api.name}, its ${api.tools.length} tools and its credentials?`,
      { modal: true }, 'Forget');
    if (sure !== 'Forget') return;
    await sidecar.request('sunwell/learnedForget', { name: api.name });
    await keys.forgetLearned(api.name);
    void vscode.window.showInformationMessage(`Sunwell: forgot ${api.name}.`);
    return;
  }
  const value = await vscode.window.showInputBox({
    title: `${api.name}: credential ${action.scheme}`, password: true, ignoreFocusOut: true,
    prompt: 'An API key or token as it is; user:password for basic; client_id:client_secret for OAuth2. Empty removes it.',
  });
  if (value === undefined) return;
  await keys.setLearned(api.name, action.scheme, value);
}

// "Sunwell: Learned APIs": the APIs learned from OpenAPI documents, their tools and hosts; choosing one offers
// to set each of its credentials (kept in VS Code's secret storage) or to Forget it.
import * as vscode from 'vscode';
import { learnedApiItem } from './common/learned';
import type { LearnedApiInfo } from './protocol';
import type { ApiKeyStore } from './secrets';
import type { Sidecar } from './sidecar';

/** `draft`: puts a line into the chat's input (Learn an API: the model learns it with learn_api once sent). */
export async function showLearnedApis(sidecar: Sidecar, keys: ApiKeyStore, draft: (text: string) => Promise<void>): Promise<void> {
  try {
    const { apis } = await sidecar.request('sunwell/learnedApis', {});
    const credentials = await keys.learned();
    const learn = { label: '$(add) Learn an API…', detail: 'from its OpenAPI document: a URL or a file of the workspace',
      alwaysShow: true, api: undefined };
    const chosen = await vscode.window.showQuickPick(
      [...apis.map((api) => ({ ...learnedApiItem(api, credentials), api })), learn],
      { title: 'Sunwell: Learned APIs', placeHolder: apis.length ? 'Choose an API to set its credentials or forget it'
        : 'No learned APIs yet: learn one from its OpenAPI document' },
    );
    if (chosen === learn) await askToLearn(draft);
    else if (chosen?.api) await offerActions(sidecar, keys, chosen.api);
  } catch (err) {
    void vscode.window.showErrorMessage(`Sunwell: ${(err as Error).message ?? err}`);
  }
}

async function askToLearn(draft: (text: string) => Promise<void>): Promise<void> {
  const source = await vscode.window.showInputBox({
    title: 'Sunwell: Learn an API', ignoreFocusOut: true,
    prompt: 'The OpenAPI document (JSON or YAML): an https URL or a path in the workspace',
    placeHolder: 'https://api.example.com/openapi.json',
  });
  if (!source?.trim()) return;
  // Through the chat: learn_api asks before it fetches, and the user sees the line before it goes.
  await draft(`Learn the API described by ${source.trim()}`);
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

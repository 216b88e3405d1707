// API keys (the model providers', the web search service's, the learned APIs' credentials) live in VS Code's
// SecretStorage and reach the sidecar only through its environment.
import * as vscode from 'vscode';
import { parseCredentials, withCredential, withoutApi, type LearnedCredentials } from './common/learned';
import { API_KEYS, type ApiKeys, type SecretName } from './common/settings';

const NAMES: SecretName[] = [...(Object.keys(API_KEYS) as SecretName[]), 'webSearch', 'learned'];

const PREFIX = 'sunwell.apiKey.';

export class ApiKeyStore implements vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<SecretName>();
  /** A key was set or removed (from this window or another): the sidecar must restart to see it. */
  readonly onDidChange = this.changed.event;
  private readonly subscription: vscode.Disposable;

  constructor(private readonly secrets: vscode.SecretStorage) {
    this.subscription = secrets.onDidChange((e) => {
      if (e.key.startsWith(PREFIX)) this.changed.fire(e.key.slice(PREFIX.length) as SecretName);
    });
  }

  async all(): Promise<ApiKeys> {
    const keys: ApiKeys = {};
    for (const name of NAMES) {
      const value = await this.secrets.get(PREFIX + name);
      if (value) keys[name] = value;
    }
    return keys;
  }

  async has(name: SecretName): Promise<boolean> {
    return !!(await this.secrets.get(PREFIX + name));
  }

  /** An empty value removes the key. */
  async set(name: SecretName, value: string): Promise<void> {
    if (value) await this.secrets.store(PREFIX + name, value);
    else await this.secrets.delete(PREFIX + name);
  }

  /** The learned APIs' credentials: `{API: {SCHEME: value}}`. */
  async learned(): Promise<LearnedCredentials> {
    return parseCredentials(await this.secrets.get(PREFIX + 'learned'));
  }

  async setLearned(api: string, scheme: string, value: string): Promise<void> {
    await this.set('learned', JSON.stringify(withCredential(await this.learned(), api, scheme, value)));
  }

  async forgetLearned(api: string): Promise<void> {
    const next = withoutApi(await this.learned(), api);
    await this.set('learned', Object.keys(next).length ? JSON.stringify(next) : '');
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}

// API keys live in VS Code's SecretStorage and reach the sidecar only through its environment.
import * as vscode from 'vscode';
import { API_KEYS, type ApiKeys, type KeyProvider } from './common/settings';

const PREFIX = 'sunwell.apiKey.';

export class ApiKeyStore implements vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<KeyProvider>();
  /** A key was set or removed (from this window or another): the sidecar must restart to see it. */
  readonly onDidChange = this.changed.event;
  private readonly subscription: vscode.Disposable;

  constructor(private readonly secrets: vscode.SecretStorage) {
    this.subscription = secrets.onDidChange((e) => {
      if (e.key.startsWith(PREFIX)) this.changed.fire(e.key.slice(PREFIX.length) as KeyProvider);
    });
  }

  async all(): Promise<ApiKeys> {
    const keys: ApiKeys = {};
    for (const provider of Object.keys(API_KEYS) as KeyProvider[]) {
      const value = await this.secrets.get(PREFIX + provider);
      if (value) keys[provider] = value;
    }
    return keys;
  }

  async has(provider: KeyProvider): Promise<boolean> {
    return !!(await this.secrets.get(PREFIX + provider));
  }

  /** An empty value removes the key. */
  async set(provider: KeyProvider, value: string): Promise<void> {
    if (value) await this.secrets.store(PREFIX + provider, value);
    else await this.secrets.delete(PREFIX + provider);
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}

// VS Code settings -> what the sidecar gets: `initializationOptions` (and the same keys under `sunwell` in
// `workspace/didChangeConfiguration`) and the environment of its process (endpoints and API keys, which the SDKs
// read themselves). Pure, so it is unit-tested without VS Code; settings are validated once here (STYLE.md 7).
import { Vocabulary, type InitializationOptions, type TrustName, type WebSearchOptions } from '../protocol';

export interface Settings {
  model: string;
  trustLevel: TrustName;
  approvalTimeoutSec: number;
  maxToolTurns: number;
  python: string;
  serverCommand: string[];
  openaiBaseUrl: string;
  anthropicBaseUrl: string;
  baseUrl: string;
  ollamaHost: string;
  dryRun: boolean;
  /** USD per million tokens by model (the cost display), on top of Sunwell's defaults. */
  prices: Record<string, { input: number; output: number }>;
  /** Hosts web_fetch reaches without asking, and never: added to `network:` of the user config. */
  'network.allow': string[];
  'network.deny': string[];
  /** The search service behind web_search; '' leaves `web_search:` of the user config. */
  'webSearch.provider': WebSearchProvider | '';
  'webSearch.baseUrl': string;
  /** The variable that carries the search key (from SecretStorage) to the sidecar. */
  'webSearch.apiKeyEnv': string;
}

export const WEB_SEARCH_PROVIDERS = ['searxng', 'brave', 'tavily'] as const satisfies readonly WebSearchOptions['provider'][];
export type WebSearchProvider = (typeof WEB_SEARCH_PROVIDERS)[number];

export const DEFAULTS: Settings = {
  model: '',
  trustLevel: 'workspace',
  approvalTimeoutSec: 600,
  maxToolTurns: 50,
  python: '',
  serverCommand: [],
  openaiBaseUrl: '',
  anthropicBaseUrl: '',
  baseUrl: '',
  ollamaHost: '',
  dryRun: false,
  prices: {},
  'network.allow': [],
  'network.deny': [],
  'webSearch.provider': '',
  'webSearch.baseUrl': '',
  'webSearch.apiKeyEnv': 'SUNWELL_WEB_SEARCH_KEY',
};

/** Which secret goes to which variable; each SDK reads its own (docs/config.md "Model strings"). */
export const API_KEYS = {
  openai: { env: 'OPENAI_API_KEY', label: 'OpenAI' },
  anthropic: { env: 'ANTHROPIC_API_KEY', label: 'Anthropic' },
  'openai-compatible': { env: 'SUNWELL_API_KEY', label: 'OpenAI-compatible server' },
} as const;
export type KeyProvider = keyof typeof API_KEYS;
/** The model providers' keys, the web search service's (its variable is a setting), the learned APIs' (JSON). */
export type SecretName = KeyProvider | 'webSearch' | 'learned';
export type ApiKeys = Partial<Record<SecretName, string>>;

export interface ReadResult {
  settings: Settings;
  /** One line per invalid value, naming the key; the default is used instead. */
  problems: string[];
}

/** Reads `sunwell.*` through `get` (a WorkspaceConfiguration's get, or a plain lookup in tests). */
export function readSettings(get: (key: string) => unknown): ReadResult {
  const problems: string[] = [];
  const settings: Settings = { ...DEFAULTS, serverCommand: [], prices: {}, 'network.allow': [], 'network.deny': [] };
  const bad = (key: keyof Settings, value: unknown, want: string) => {
    problems.push(`sunwell.${key}: ${JSON.stringify(value)} is not ${want}; using ${JSON.stringify(DEFAULTS[key])}`);
  };
  for (const key of ['model', 'python', 'openaiBaseUrl', 'anthropicBaseUrl', 'baseUrl', 'ollamaHost'] as const) {
    const value = get(key);
    if (value === undefined || value === null) continue;
    if (typeof value === 'string') settings[key] = value.trim();
    else bad(key, value, 'a string');
  }
  const trust = get('trustLevel');
  if (trust !== undefined && trust !== null) {
    if (typeof trust === 'string' && (Vocabulary.TrustName as readonly string[]).includes(trust)) settings.trustLevel = trust as TrustName;
    else bad('trustLevel', trust, `one of ${Vocabulary.TrustName.join(', ')}`);
  }
  const positive = (key: 'approvalTimeoutSec' | 'maxToolTurns', integer: boolean) => {
    const value = get(key);
    if (value === undefined || value === null) return;
    if (typeof value === 'number' && Number.isFinite(value) && value > 0 && (!integer || Number.isInteger(value))) settings[key] = value;
    else bad(key, value, integer ? 'a positive integer' : 'a positive number');
  };
  positive('approvalTimeoutSec', false);
  positive('maxToolTurns', true);
  const dryRun = get('dryRun');
  if (dryRun !== undefined && dryRun !== null) {
    if (typeof dryRun === 'boolean') settings.dryRun = dryRun;
    else bad('dryRun', dryRun, 'true or false');
  }
  const prices = get('prices');
  if (prices !== undefined && prices !== null) {
    const valid = typeof prices === 'object' && !Array.isArray(prices) && Object.values(prices as object).every((p) =>
      typeof p === 'object' && p !== null && [p.input, p.output].every((n) => typeof n === 'number' && Number.isFinite(n) && n >= 0));
    if (valid) settings.prices = prices as Settings['prices'];
    else bad('prices', prices, 'a map of model to {input, output} (USD per million tokens)');
  }
  for (const key of ['network.allow', 'network.deny'] as const) {
    const value = get(key);
    if (value === undefined || value === null) continue;
    if (Array.isArray(value) && value.every((v) => typeof v === 'string')) settings[key] = value.map((v) => v.trim()).filter(Boolean);
    else bad(key, value, 'a list of host names or addresses');
  }
  const provider = get('webSearch.provider');
  if (provider !== undefined && provider !== null && provider !== '') {
    if ((WEB_SEARCH_PROVIDERS as readonly unknown[]).includes(provider)) settings['webSearch.provider'] = provider as WebSearchProvider;
    else bad('webSearch.provider', provider, `one of ${WEB_SEARCH_PROVIDERS.join(', ')}`);
  }
  const baseUrl = get('webSearch.baseUrl');
  if (baseUrl !== undefined && baseUrl !== null && baseUrl !== '') {
    if (typeof baseUrl === 'string' && /^https?:\/\//.test(baseUrl.trim())) settings['webSearch.baseUrl'] = baseUrl.trim();
    else bad('webSearch.baseUrl', baseUrl, 'an http(s) URL');
  }
  const keyEnv = get('webSearch.apiKeyEnv');
  if (keyEnv !== undefined && keyEnv !== null && keyEnv !== '') {
    if (typeof keyEnv === 'string' && /^[A-Za-z_][A-Za-z0-9_]*$/.test(keyEnv.trim())) settings['webSearch.apiKeyEnv'] = keyEnv.trim();
    else bad('webSearch.apiKeyEnv', keyEnv, 'an environment variable name');
  }
  const command = get('serverCommand');
  if (command !== undefined && command !== null) {
    if (Array.isArray(command) && command.every((c) => typeof c === 'string')) settings.serverCommand = command.filter((c) => c !== '');
    else if (typeof command === 'string') settings.serverCommand = command.trim() ? [command.trim()] : [];
    else bad('serverCommand', command, 'a list of strings');
  }
  return { settings, problems };
}

/**
 * The `sunwell` section of `workspace/didChangeConfiguration`: every key, null where the setting is empty, so
 * clearing a setting in VS Code hands the value back to Sunwell's own config.
 */
export function sidecarConfiguration(s: Settings): InitializationOptions {
  const provider = s['webSearch.provider'];
  return {
    model: s.model || null,
    trust: s.trustLevel,
    approval: 'ask',
    approvalTimeoutSec: s.approvalTimeoutSec,
    maxToolTurns: s.maxToolTurns,
    dryRun: s.dryRun,
    baseUrl: s.baseUrl || null,
    prices: Object.keys(s.prices).length ? s.prices : null,
    network: { allow: s['network.allow'], deny: s['network.deny'] },
    webSearch: provider ? { provider, baseUrl: s['webSearch.baseUrl'] || null, apiKeyEnv: s['webSearch.apiKeyEnv'] } : null,
  };
}

/** `initializationOptions`: the configuration plus the data dir (VS Code's workspace storage). */
export function initializationOptions(s: Settings, dataDir: string): InitializationOptions {
  // The chat answers `ask_user`'s questions and MCP servers' elicitations; the editor's language features answer
  // code intelligence; SecretStorage keeps MCP servers' OAuth sign-ins.
  return {
    dataDir, ...sidecarConfiguration(s), clientCapabilities: { ask: true, codeIntel: true, elicit: true, secrets: true },
  };
}

/**
 * The sidecar's environment: the extension host's own, plus the endpoints and the keys from SecretStorage. A key
 * set in SecretStorage wins over one inherited from the shell; an empty endpoint setting leaves the inherited one.
 */
export function sidecarEnvironment(s: Settings, keys: ApiKeys, base: NodeJS.ProcessEnv): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) if (v !== undefined) env[k] = v;
  if (s.openaiBaseUrl) env.OPENAI_BASE_URL = s.openaiBaseUrl;
  if (s.anthropicBaseUrl) env.ANTHROPIC_BASE_URL = s.anthropicBaseUrl;
  if (s.ollamaHost) env.OLLAMA_HOST = s.ollamaHost;
  if (s.baseUrl) env.SUNWELL_BASE_URL = s.baseUrl;
  for (const provider of Object.keys(API_KEYS) as KeyProvider[]) {
    const key = keys[provider];
    if (key) env[API_KEYS[provider].env] = key;
  }
  if (keys.webSearch) env[s['webSearch.apiKeyEnv']] = keys.webSearch;
  if (keys.learned) env.SUNWELL_LEARNED_CREDENTIALS = keys.learned;
  // The sidecar's stdout is the protocol: make sure Python never buffers it, and never writes bytecode into a
  // read-only install of the bundled package.
  env.PYTHONUNBUFFERED = '1';
  env.PYTHONDONTWRITEBYTECODE = '1';
  return env;
}

/** Settings that live in the sidecar's process (its command line or environment) need a restart to change. */
export function needsRestart(before: Settings, after: Settings): boolean {
  return (
    before.python !== after.python ||
    before.serverCommand.join('\0') !== after.serverCommand.join('\0') ||
    before.openaiBaseUrl !== after.openaiBaseUrl ||
    before.anthropicBaseUrl !== after.anthropicBaseUrl ||
    before.ollamaHost !== after.ollamaHost ||
    before.baseUrl !== after.baseUrl ||
    before['webSearch.apiKeyEnv'] !== after['webSearch.apiKeyEnv']
  );
}

/**
 * The settings after a configuration change: the new value of each key the change affects, the old value of every
 * other. A change to one setting must never move another, whatever a read in the middle of it returns (the
 * interpreter above all: a restart for a new endpoint starts the same Python).
 */
export function keepUnaffected(before: Settings, after: Settings, affects: (key: keyof Settings) => boolean): Settings {
  const merged = { ...before };
  for (const key of Object.keys(after) as (keyof Settings)[]) {
    if (affects(key)) (merged as Record<string, unknown>)[key] = after[key];
  }
  return merged;
}

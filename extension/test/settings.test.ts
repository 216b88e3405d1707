// VS Code settings -> the sidecar's initializationOptions, configuration changes and environment.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DEFAULTS, initializationOptions, keepUnaffected, needsRestart, readSettings, sidecarConfiguration, sidecarEnvironment,
} from '../src/common/settings';

const lookup = (values: Record<string, unknown>) => (key: string) => values[key];

describe('reading settings', () => {
  it('uses the defaults when nothing is set', () => {
    const { settings, problems } = readSettings(lookup({}));
    assert.deepEqual(settings, DEFAULTS);
    assert.deepEqual(problems, []);
  });

  it('takes valid values, trimmed', () => {
    const { settings, problems } = readSettings(lookup({
      model: ' openai:gpt-4o ', trustLevel: 'shell', approvalTimeoutSec: 30, maxToolTurns: 7, python: '/usr/bin/python3.12',
      baseUrl: 'http://127.0.0.1:8080/v1', dryRun: true, serverCommand: ['/x/python', '-m', 'sunwell', 'serve'],
    }));
    assert.deepEqual(problems, []);
    assert.equal(settings.model, 'openai:gpt-4o');
    assert.equal(settings.trustLevel, 'shell');
    assert.equal(settings.approvalTimeoutSec, 30);
    assert.equal(settings.maxToolTurns, 7);
    assert.equal(settings.dryRun, true);
    assert.deepEqual(settings.serverCommand, ['/x/python', '-m', 'sunwell', 'serve']);
  });

  it('names each invalid key and falls back to its default', () => {
    const { settings, problems } = readSettings(lookup({ trustLevel: 'root', maxToolTurns: 2.5, approvalTimeoutSec: -1, model: 42 }));
    assert.equal(settings.trustLevel, 'workspace');
    assert.equal(settings.maxToolTurns, 50);
    assert.equal(settings.approvalTimeoutSec, 600);
    assert.equal(settings.model, '');
    assert.equal(problems.length, 4);
    assert.ok(problems.some((p) => p.startsWith('sunwell.trustLevel: "root"')));
    assert.ok(problems.some((p) => p.startsWith('sunwell.maxToolTurns: 2.5')));
  });
});

describe('initializationOptions and configuration changes', () => {
  it('map VS Code names to the protocol keys, with the workspace storage as data dir and approvals asked', () => {
    const { settings } = readSettings(lookup({ model: 'anthropic:claude-sonnet-4-5', trustLevel: 'read_only', approvalTimeoutSec: 90,
      maxToolTurns: 12, baseUrl: 'http://127.0.0.1:9/v1' }));
    assert.deepEqual(initializationOptions(settings, '/storage/ws'), {
      dataDir: '/storage/ws',
      model: 'anthropic:claude-sonnet-4-5',
      trust: 'read_only',
      approval: 'ask',
      approvalTimeoutSec: 90,
      maxToolTurns: 12,
      dryRun: false,
      baseUrl: 'http://127.0.0.1:9/v1',
      prices: null,
      network: { allow: [], deny: [] },
      webSearch: null,
      // questions, code intelligence, MCP forms, MCP sign-ins in SecretStorage
      clientCapabilities: { ask: true, codeIntel: true, elicit: true, secrets: true },
    });
  });

  it('pass the network rules and the search service (its key travels in the environment, never here)', () => {
    const { settings, problems } = readSettings(lookup({ 'network.allow': [' docs.python.org ', '127.0.0.1', ''],
      'network.deny': ['*.ads.example'], 'webSearch.provider': 'brave' }));
    assert.deepEqual(problems, []);
    const config = sidecarConfiguration(settings);
    assert.deepEqual(config.network, { allow: ['docs.python.org', '127.0.0.1'], deny: ['*.ads.example'] });
    assert.deepEqual(config.webSearch, { provider: 'brave', baseUrl: null, apiKeyEnv: 'SUNWELL_WEB_SEARCH_KEY' });
    const searx = readSettings(lookup({ 'webSearch.provider': 'searxng', 'webSearch.baseUrl': 'http://127.0.0.1:8888' })).settings;
    assert.equal(sidecarConfiguration(searx).webSearch?.baseUrl, 'http://127.0.0.1:8888');
  });

  it('name a wrong network or search setting and use its default', () => {
    const { settings, problems } = readSettings(lookup({ 'network.allow': 'docs.python.org', 'network.deny': [1],
      'webSearch.provider': 'google', 'webSearch.baseUrl': 'file:///etc', 'webSearch.apiKeyEnv': 'MY KEY' }));
    assert.deepEqual(settings['network.allow'], []);
    assert.equal(settings['webSearch.provider'], '');
    assert.equal(settings['webSearch.apiKeyEnv'], 'SUNWELL_WEB_SEARCH_KEY');
    assert.equal(problems.length, 5);
    assert.ok(problems.some((p) => p.startsWith('sunwell.network.allow: "docs.python.org"')));
    assert.ok(problems.some((p) => p.startsWith('sunwell.webSearch.provider: "google"')));
  });

  it('pass prices (USD per million tokens) as the sidecar\'s `prices`, and name a wrong one', () => {
    const prices = { 'openai-compatible:qwen': { input: 0.1, output: 0.2 } };
    assert.deepEqual(sidecarConfiguration(readSettings(lookup({ prices })).settings).prices, prices);
    const { settings, problems } = readSettings(lookup({ prices: { 'gpt-4o': { input: 'cheap' } } }));
    assert.deepEqual(settings.prices, {});
    assert.match(problems[0], /^sunwell\.prices: /);
  });

  it('send null for an empty setting, so clearing it hands the value back to Sunwell\'s config', () => {
    const config = sidecarConfiguration(DEFAULTS);
    assert.equal(config.model, null);
    assert.equal(config.baseUrl, null);
    assert.equal('dataDir' in config, false);
  });
});

describe('the sidecar environment', () => {
  it('carries endpoints and keys from secret storage, each in its SDK\'s own variable', () => {
    const { settings } = readSettings(lookup({ openaiBaseUrl: 'http://o/v1', anthropicBaseUrl: 'http://a', ollamaHost: 'http://l:1',
      baseUrl: 'http://c/v1' }));
    const env = sidecarEnvironment(settings, { openai: 'sk-o', anthropic: 'sk-a', 'openai-compatible': 'sk-c' }, { PATH: '/bin', HOME: '/h' });
    assert.equal(env.PATH, '/bin');
    assert.equal(env.OPENAI_BASE_URL, 'http://o/v1');
    assert.equal(env.ANTHROPIC_BASE_URL, 'http://a');
    assert.equal(env.OLLAMA_HOST, 'http://l:1');
    assert.equal(env.SUNWELL_BASE_URL, 'http://c/v1');
    assert.equal(env.OPENAI_API_KEY, 'sk-o');
    assert.equal(env.ANTHROPIC_API_KEY, 'sk-a');
    assert.equal(env.SUNWELL_API_KEY, 'sk-c');
  });

  it('carries the web search key in the variable the setting names', () => {
    assert.equal(sidecarEnvironment(DEFAULTS, { webSearch: 'bs-1' }, {}).SUNWELL_WEB_SEARCH_KEY, 'bs-1');
    const env = sidecarEnvironment({ ...DEFAULTS, 'webSearch.apiKeyEnv': 'BRAVE_KEY' }, { webSearch: 'bs-1' }, {});
    assert.deepEqual([env.BRAVE_KEY, env.SUNWELL_WEB_SEARCH_KEY], ['bs-1', undefined]);
    assert.equal(needsRestart(DEFAULTS, { ...DEFAULTS, 'webSearch.apiKeyEnv': 'BRAVE_KEY' }), true);
    assert.equal(needsRestart(DEFAULTS, { ...DEFAULTS, 'network.allow': ['a.example'] }), false);
  });

  it('keeps inherited variables where nothing is set, and never puts the compatible key in OPENAI_API_KEY', () => {
    const env = sidecarEnvironment(DEFAULTS, { 'openai-compatible': 'sk-c' }, { OPENAI_API_KEY: 'from-shell', OPENAI_BASE_URL: 'http://shell' });
    assert.equal(env.OPENAI_API_KEY, 'from-shell');
    assert.equal(env.OPENAI_BASE_URL, 'http://shell');
    assert.equal(env.SUNWELL_API_KEY, 'sk-c');
    assert.equal(env.PYTHONUNBUFFERED, '1');
  });

  it('restarts only for what lives in the process: interpreter, command, endpoints', () => {
    const base = readSettings(lookup({})).settings;
    assert.equal(needsRestart(base, { ...base, model: 'x', trustLevel: 'full', maxToolTurns: 3 }), false);
    assert.equal(needsRestart(base, { ...base, python: '/p' }), true);
    assert.equal(needsRestart(base, { ...base, openaiBaseUrl: 'http://o' }), true);
    assert.equal(needsRestart(base, { ...base, serverCommand: ['x'] }), true);
  });
});

describe('a configuration change', () => {
  it('moves only the settings it affects: a new endpoint never drops the interpreter (issue 17, bug 2)', () => {
    const before = { ...DEFAULTS, python: '/work/.venv/bin/python', baseUrl: 'http://127.0.0.1:8080/v1' };
    // a read in the middle of the change that lost the interpreter (machine-scoped, from another settings file)
    const read = { ...DEFAULTS, python: '', baseUrl: 'http://127.0.0.1:9090/v1' };
    const after = keepUnaffected(before, read, (key) => key === 'baseUrl');
    assert.equal(after.python, '/work/.venv/bin/python');
    assert.equal(after.baseUrl, 'http://127.0.0.1:9090/v1');
    assert.equal(needsRestart(before, after), true);
  });

  it('takes a cleared interpreter when the change is the interpreter\'s', () => {
    const before = { ...DEFAULTS, python: '/work/.venv/bin/python' };
    assert.equal(keepUnaffected(before, DEFAULTS, (key) => key === 'python').python, '');
  });
});

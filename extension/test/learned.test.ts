// How the "Sunwell: Learned APIs" picker shows each API, and the learned credentials kept in one secret.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { learnedApiItem, parseCredentials, withCredential, withoutApi } from '../src/common/learned';
import { readSettings, sidecarEnvironment } from '../src/common/settings';

const API = { name: 'notes', title: 'Notes', source: 'https://notes.example/openapi.yaml', hosts: ['notes.example'],
  tools: ['notes__echo', 'notes__add_note'], schemes: ['key'], operations: 4 };

describe('Learned APIs picker', () => {
  it('shows the tools offered of all, the hosts, and whether each credential is set', () => {
    assert.deepEqual(learnedApiItem(API, {}), { label: '$(globe) notes',
      description: 'Notes · 2 tools of 4 · notes.example · key missing', detail: 'from https://notes.example/openapi.yaml' });
    assert.equal(learnedApiItem({ ...API, operations: 2 }, { notes: { key: 'k' } }).description,
      'Notes · 2 tools · notes.example · key set');
  });

  it('keeps the credentials as one JSON secret, removed per scheme or per API', () => {
    let kept = withCredential({}, 'notes', 'key', 'secret-1');
    kept = withCredential(kept, 'poke', 'bearer', 'secret-2');
    assert.deepEqual(parseCredentials(JSON.stringify(kept)), { notes: { key: 'secret-1' }, poke: { bearer: 'secret-2' } });
    assert.deepEqual(withCredential(kept, 'notes', 'key', ''), { poke: { bearer: 'secret-2' } });
    assert.deepEqual(withoutApi(kept, 'poke'), { notes: { key: 'secret-1' } });
    assert.deepEqual(parseCredentials('not json'), {});
    assert.deepEqual(parseCredentials('[1]'), {});
  });

  it('hands them to the sidecar in its environment only', () => {
    const { settings } = readSettings(() => undefined);
    const env = sidecarEnvironment(settings, { learned: '{"notes":{"key":"k"}}' }, {});
    assert.equal(env.SUNWELL_LEARNED_CREDENTIALS, '{"notes":{"key":"k"}}');
    assert.equal(sidecarEnvironment(settings, {}, {}).SUNWELL_LEARNED_CREDENTIALS, undefined);
  });
});

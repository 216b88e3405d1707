// How the sidecar's Python is checked and the private environment installed.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { findSunwellWheel, interpreterKey, markerIsCurrent, parseProbe, pipInstallAttempts, PROBE_SCRIPT, pythonIsRecentEnough, SERVE_ARGS, venvPython } from '../src/common/launch';
import { platformPattern, wheelsMismatch } from '../src/common/wheels';
import { ROOT } from './helpers';

describe('the interpreter probe', () => {
  it('runs in a real Python and says whether sunwell is importable', () => {
    const python = process.env.SUNWELL_PYTHON ?? 'python3';
    const without = parseProbe(execFileSync(python, ['-c', PROBE_SCRIPT], { encoding: 'utf8', env: { ...process.env, PYTHONPATH: '' }, cwd: '/' }));
    assert.ok(without);
    assert.ok(without.python[0] >= 3);
    const withPackage = parseProbe(execFileSync(python, ['-c', PROBE_SCRIPT], { encoding: 'utf8',
      env: { ...process.env, PYTHONPATH: path.join(ROOT, 'server') } }));
    assert.ok(withPackage?.sunwell, 'sunwell importable from server/');
  });

  it('rejects output that is not the probe\'s and Pythons older than 3.11', () => {
    assert.equal(parseProbe('Traceback...'), null);
    assert.equal(pythonIsRecentEnough({ python: [3, 10, 12], sunwell: null, executable: '' }), false);
    assert.equal(pythonIsRecentEnough({ python: [3, 11, 0], sunwell: null, executable: '' }), true);
    assert.equal(pythonIsRecentEnough({ python: [4, 0, 0], sunwell: null, executable: '' }), true);
  });
});

describe('the sidecar command line', () => {
  it('never imports a module from the workspace it starts in (a hostile json.py)', () => {
    const python = process.env.SUNWELL_PYTHON ?? 'python3';
    const ws = mkdtempSync(path.join(os.tmpdir(), 'sunwell-hostile-'));
    writeFileSync(path.join(ws, 'json.py'), "open('PWNED', 'w').close()\n");
    // `serve --help` imports the package and its CLI (json among them), then exits
    const out = spawnSync(python, [...SERVE_ARGS, '--help'], { cwd: ws, encoding: 'utf8', timeout: 60_000,
      env: { ...process.env, PYTHONPATH: path.join(ROOT, 'server') } });
    assert.equal(out.status, 0, out.stderr);
    assert.ok(!existsSync(path.join(ws, 'PWNED')), 'the workspace json.py ran');
  });
});

describe('the private environment', () => {
  it('installs the vendored wheel offline first, then lets pip fetch what is missing; else builds from source', () => {
    const wheel = path.join('/ext/dist/python/wheels', 'sunwell-0.1.0-py3-none-any.whl');
    const attempts = pipInstallAttempts({ wheelsDir: '/ext/dist/python/wheels', wheel });
    assert.equal(attempts.length, 2);
    assert.deepEqual(attempts[0].slice(-4), ['--no-index', '--find-links', '/ext/dist/python/wheels', wheel]);
    assert.ok(!attempts[1].includes('--no-index'));
    assert.equal(attempts[1].at(-1), wheel, 'the package by its file, never by name from the index');
    assert.deepEqual(pipInstallAttempts({ sourceDir: '/tmp/src' }), [['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--upgrade', '/tmp/src']]);
    assert.equal(findSunwellWheel(['pydantic-2.0-cp311-none-any.whl', 'sunwell-0.1.0-py3-none-any.whl', 'sunwell_x-1-py3-none-any.whl']),
      'sunwell-0.1.0-py3-none-any.whl');
  });

  it('lives in the venv\'s own interpreter, reinstalled when another extension version made it', () => {
    assert.equal(venvPython('/g/python-env', 'linux'), '/g/python-env/bin/python');
    assert.match(venvPython('C:\\g\\python-env', 'win32'), /Scripts[\\/]python\.exe$/);
    assert.equal(markerIsCurrent({ version: '0.1.0' }, '0.1.0'), true);
    assert.equal(markerIsCurrent({ version: '0.0.9' }, '0.1.0'), false);
    assert.equal(markerIsCurrent(null, '0.1.0'), false);
  });
});

describe('the launch a restart reuses', () => {
  it('is keyed by the interpreter settings alone', () => {
    const key = interpreterKey({ python: '/work/.venv/bin/python', serverCommand: [] });
    assert.equal(interpreterKey({ python: '/work/.venv/bin/python', serverCommand: [] }), key);
    assert.notEqual(interpreterKey({ python: '', serverCommand: [] }), key);
    assert.notEqual(interpreterKey({ python: '/work/.venv/bin/python', serverCommand: ['x'] }), key);
  });
});

describe('the bundled wheels and the Python that installs them', () => {
  const linux = ['sunwell-0.1.0-py3-none-any.whl', 'pydantic-2.9.0-py3-none-any.whl',
    'watchfiles-1.0.0-cp310-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl',
    ...['11', '12', '13'].map((v) => `pydantic_core-2.23.0-cp3${v}-cp3${v}-manylinux_2_17_x86_64.manylinux2014_x86_64.whl`)];
  const probe = (python: number[], platform: string, machine: string, implementation = 'cpython') =>
    ({ python, sunwell: null, executable: '/usr/bin/python3', implementation, platform, machine });

  it('fit a supported CPython on their platform', () => {
    assert.equal(wheelsMismatch(linux, probe([3, 12, 1], 'linux', 'x86_64')), null);
    assert.equal(wheelsMismatch(['sunwell-0.1.0-py3-none-any.whl'], probe([3, 11, 0], 'darwin', 'arm64')), null, 'pure Python fits anywhere');
  });

  it('say which Pythons and platform they are for when this Python is another version', () => {
    const message = wheelsMismatch(linux, probe([3, 14, 0], 'linux', 'x86_64'));
    assert.ok(message);
    assert.match(message, /CPython 3\.11, 3\.12, 3\.13 on Linux x86_64/);
    assert.match(message, /is CPython 3\.14 on linux x86_64/);
    assert.match(message, /pydantic-core/);
    assert.ok(!message.includes('watchfiles'), 'abi3 from 3.10 serves 3.14');
  });

  it('say so for another architecture or another platform, and for PyPy', () => {
    assert.match(wheelsMismatch(linux, probe([3, 12, 0], 'linux', 'aarch64')) ?? '', /on linux aarch64/);
    assert.match(wheelsMismatch(linux, probe([3, 12, 0], 'darwin', 'arm64')) ?? '', /built for your platform/);
    assert.match(wheelsMismatch(linux, probe([3, 11, 0], 'linux', 'x86_64', 'pypy')) ?? '', /is pypy 3\.11/);
  });

  it('map each platform to the wheel tags that run there', () => {
    assert.ok(platformPattern('win32', 'AMD64')?.test('win_amd64'));
    assert.ok(platformPattern('darwin', 'arm64')?.test('macosx_11_0_universal2'));
    assert.ok(!platformPattern('darwin', 'x86_64')?.test('macosx_11_0_arm64'));
    assert.ok(!platformPattern('linux', 'x86_64')?.test('musllinux_1_2_x86_64'));
    assert.equal(platformPattern('freebsd14', 'amd64'), null);
  });
});

// The protocol types are current and the manifest agrees with the code that implements it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { CHAT_VIEW_ID } from '../src/common/ids';
import { ROOT } from './helpers';

const manifest = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const contributes = manifest.contributes;
const sources = readdirSync(path.join(ROOT, 'extension', 'src'), { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.ts'))
  .map((f) => readFileSync(path.join(ROOT, 'extension', 'src', f), 'utf8'))
  .join('\n');

describe('generated protocol types', () => {
  it('are what the generator makes from the Python models now (else: npm run gen)', () => {
    const result = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'gen-protocol-types.mjs'), '--check'], { encoding: 'utf8', cwd: ROOT });
    assert.equal(result.status, 0, `${result.stderr}${result.stdout}`);
  });
});

describe('manifest', () => {
  it('runs the bundle on VS Code 1.90+, activated by the view, the commands and lens files', () => {
    assert.equal(manifest.main, './dist/extension.js');
    assert.equal(manifest.engines.vscode, '^1.90.0');
    for (const event of [`onView:${CHAT_VIEW_ID}`, 'onLanguage:lens', 'workspaceContains:**/*.lens']) {
      assert.ok(manifest.activationEvents.includes(event), event);
    }
  });

  it('keeps what decides what runs and how much is allowed out of workspace settings (machine scope)', () => {
    const props = contributes.configuration.properties;
    for (const key of ['python', 'serverCommand', 'trustLevel', 'baseUrl', 'openaiBaseUrl', 'anthropicBaseUrl', 'ollamaHost',
      'network.allow', 'network.deny', 'webSearch.provider', 'webSearch.baseUrl', 'webSearch.apiKeyEnv']) {
      assert.equal(props[`sunwell.${key}`].scope, 'machine', key);
    }
    // updateSetting never writes a machine-scoped setting to the workspace, judged by the scope above (settingsPlace.ts)
    assert.match(sources, /inspect\?\.workspaceValue !== undefined && !machineScoped\(key\)/, 'updateSetting must not write machine settings to the workspace');
    assert.match(sources, /scope === 'machine'/, 'machineScoped does not read the manifest\'s scope');
  });

  it('contributes the chat as a webview view in its own activity-bar container', () => {
    const container = contributes.viewsContainers.activitybar.find((c: { id: string }) => c.id === 'sunwell');
    assert.ok(container);
    const [view] = contributes.views.sunwell;
    assert.deepEqual([view.type, view.id], ['webview', CHAT_VIEW_ID]);
  });

  it('contributes the lens language and grammars exactly as specified', () => {
    assert.deepEqual(contributes.languages, [{ id: 'lens', aliases: ['Lens', 'lens'], extensions: ['.lens'],
      configuration: './syntaxes/lens.language-configuration.json' }]);
    assert.deepEqual(contributes.grammars, [
      { language: 'lens', scopeName: 'source.lens', path: './syntaxes/lens.tmLanguage.json',
        unbalancedBracketScopes: ['invalid.illegal', 'meta.scalar.yaml', 'storage.type.tag.shorthand.yaml', 'keyword.control.flow'] },
      { scopeName: 'sunwell.command.injection', path: './syntaxes/sunwell-command.injection.tmLanguage.json',
        injectTo: ['text.html.markdown', 'source.yaml', 'source.lens'] },
    ]);
    const check = spawnSync(process.execPath, [path.join(ROOT, 'tests', 'grammar', 'check-manifest.js')], { encoding: 'utf8' });
    assert.equal(check.status, 0, check.stderr);
  });

  it('has the commands the issue lists, each registered by the code, and menus name only contributed ones', () => {
    const ids = contributes.commands.map((c: { command: string }) => c.command);
    for (const id of ['openChat', 'newSession', 'stop', 'selectModel', 'setTrustLevel', 'useLens', 'undoLastTurn', 'setApiKey',
      'showAuditLog', 'restartSidecar', 'runSkill', 'setWebSearchKey']) {
      assert.ok(ids.includes(`sunwell.${id}`), id);
    }
    for (const id of ids) assert.ok(sources.includes(`'${id}'`), `${id} is registered`);
    const used = [
      ...Object.values(contributes.menus).flat().map((m) => (m as { command: string }).command),
      ...contributes.keybindings.map((k: { command: string }) => k.command),
    ];
    for (const id of used) assert.ok(ids.includes(id), `${id} is contributed`);
  });

  it('has the settings the client reads', () => {
    const keys = Object.keys(contributes.configuration.properties);
    for (const key of ['model', 'trustLevel', 'approvalTimeoutSec', 'maxToolTurns', 'python', 'openaiBaseUrl', 'anthropicBaseUrl',
      'baseUrl', 'ollamaHost', 'serverCommand', 'dryRun', 'network.allow', 'network.deny', 'webSearch.provider', 'webSearch.baseUrl',
      'webSearch.apiKeyEnv']) {
      assert.ok(keys.includes(`sunwell.${key}`), key);
    }
    assert.deepEqual(contributes.configuration.properties['sunwell.trustLevel'].enum, ['discovery', 'read_only', 'workspace', 'shell', 'full']);
  });
});

describe('marketplace listing', () => {
  it('names its licence, repository, issues, home page, icon and banner', () => {
    assert.equal(manifest.license, 'MIT');
    assert.match(readFileSync(path.join(ROOT, 'LICENSE'), 'utf8'), /^MIT License/);
    for (const key of ['repository', 'bugs', 'homepage', 'galleryBanner']) assert.ok(manifest[key], key);
    const icon = readFileSync(path.join(ROOT, manifest.icon));
    assert.equal(icon.subarray(1, 4).toString(), 'PNG');
    assert.deepEqual([icon.readUInt32BE(16), icon.readUInt32BE(20)], [128, 128]);
    assert.ok(readFileSync(path.join(ROOT, 'CHANGELOG.md'), 'utf8').startsWith('# Changelog'));
  });

  it('packages no tests, sources, source maps or development files (vsce ls)', () => {
    const listed = spawnSync(path.join(ROOT, 'node_modules', '.bin', 'vsce'), ['ls', '--no-dependencies'], { encoding: 'utf8', cwd: ROOT });
    assert.equal(listed.status, 0, listed.stderr);
    const files = listed.stdout.split('\n').filter(Boolean);
    for (const wanted of ['package.json', 'LICENSE', 'CHANGELOG.md', 'extension/media/icon.png']) assert.ok(files.includes(wanted), wanted);
    const unwanted = files.filter((f) => /\.map$|\.tsx?$|^(tests?|extension\/(src|test|build)|scripts|server|node_modules|\.github|\.venv)\/|^dist\/(own-wheel|wheel-cache)\/|\.vsix$/.test(f));
    assert.deepEqual(unwanted, []);
  });
});

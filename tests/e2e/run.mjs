#!/usr/bin/env node
// End-to-end test of the Sunwell extension in real VS Code (code-server) driven by headless Chromium, against the
// scripted fake provider (tests/e2e/fake_server.py). Run it through scripts/e2e.sh, which installs and builds what
// is missing and sets:
//   CODE_SERVER          the code-server binary (scripts/setup-vscode.sh)
//   SUNWELL_VSIX         the .vsix to install
//   E2E_PYTHON           a Python 3.11+ for the fake provider (stdlib only)
//   E2E_SIDECAR_PYTHON   optional: `sunwell.python` for the engine; unset = the real first-run path (the chat's
//                        Install button puts the .vsix's bundled wheels into a private venv)
//   E2E_ONLY             optional: comma-separated scenario names to run (setup ones always run)
//   E2E_KEEP=1           keep the temp dir (profile, workspace, logs) for inspection
// Screenshots go to tests/e2e/artifacts/. The last line is `e2e: N passed, N failed`; the exit code is 1 on failure.
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import {
  chatFrame, check, clearNotifications, descendants, json, openFile, quickInput, runCommand, sleep, startGroup, stopAll,
  until, waitForHttp, waitForWorkbench, withTimeout,
} from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const ARTIFACTS = path.join(here, 'artifacts');
const env = process.env;
const CODE_SERVER = env.CODE_SERVER;
const VSIX = env.SUNWELL_VSIX ?? path.join(root, 'sunwell-0.1.0.vsix');
const PYTHON = env.E2E_PYTHON ?? 'python3';
const SIDECAR_PYTHON = env.E2E_SIDECAR_PYTHON ?? '';
const ONLY = env.E2E_ONLY ? new Set(env.E2E_ONLY.split(',').map((s) => s.trim())) : null;
const CHROMIUM = env.E2E_CHROMIUM ?? '/usr/bin/chromium';
const t0 = Date.now();
const elapsed = () => `${((Date.now() - t0) / 1000).toFixed(1)}s`;
const log = (line) => console.log(`[${elapsed().padStart(6)}] ${line}`);

for (const [what, file] of [['CODE_SERVER', CODE_SERVER], ['SUNWELL_VSIX', VSIX], ['chromium', CHROMIUM]]) {
  if (!file || !existsSync(file)) {
    console.error(`e2e: ${what} not found (${file ?? 'unset'}); run scripts/e2e.sh, which installs it`);
    console.log('e2e: 0 passed, 1 failed');
    process.exit(1);
  }
}

// ---- the test's own world: HOME, profile, extensions, workspace -----------------------------------------------
const E2E = mkdtempSync(path.join(tmpdir(), 'sunwell-e2e-'));
const HOME = path.join(E2E, 'home');
const DATA = path.join(E2E, 'data');
const EXT = path.join(E2E, 'ext');
const WS = path.join(E2E, 'workspace');
const LOGS = path.join(E2E, 'logs');
for (const dir of [HOME, path.join(DATA, 'User'), EXT, WS, LOGS]) mkdirSync(dir, { recursive: true });
rmSync(ARTIFACTS, { recursive: true, force: true });
mkdirSync(ARTIFACTS, { recursive: true });

const APP_PY = 'def main():\n    return 42\n';
const LENS = [
  '# A lens with one mistake: a misspelt key.',
  'name: review',
  'description: Review code with care.',
  'instructionz: Read before you judge.',
  'tool_policy:',
  '  trust_level: read_only',
  '',
].join('\n');
writeFileSync(path.join(WS, 'a.txt'), 'hello from the demo\n');
mkdirSync(path.join(WS, 'src'));
writeFileSync(path.join(WS, 'src', 'app.py'), APP_PY);
writeFileSync(path.join(WS, 'review.lens'), LENS);
writeFileSync(path.join(WS, 'README.md'), '# Demo\n\nA small workspace for the Sunwell end-to-end test.\n');
// TypeScript for code intelligence: a type error in broken.ts, which uses greet.ts
writeFileSync(path.join(WS, 'src', 'greet.ts'), 'export function greet(name: string): string {\n  return `hello ${name}`;\n}\n');
writeFileSync(path.join(WS, 'src', 'broken.ts'), "import { greet } from './greet';\n\nexport const count: number = greet('world');\n");

const baseEnv = Object.fromEntries(Object.entries(env).filter(([k]) => !/^(OPENAI_|ANTHROPIC_|SUNWELL_|VSCODE_|PIP_|PYTHON|VIRTUAL_ENV)/.test(k)));
const isolated = {
  ...baseEnv,
  HOME,
  XDG_CONFIG_HOME: path.join(HOME, '.config'),
  XDG_DATA_HOME: path.join(HOME, '.local', 'share'),
  XDG_CACHE_HOME: path.join(HOME, '.cache'),
  TMPDIR: path.join(E2E, 'tmp'),
  PIP_NO_INDEX: '1', // the private venv must install from the .vsix's wheels alone: offline is the point
};
mkdirSync(isolated.TMPDIR);

const freePort = () => new Promise((resolve, reject) => {
  const server = createServer();
  server.once('error', reject);
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address();
    server.close(() => resolve(port));
  });
});

let browser;
let fake;
let page;
let codeServer;
const results = [];
let shotNumber = 0;
/** A real 96×64 PNG (a blue field, a yellow box, a red disc), as a pasted screenshot would be. */
const SMALL_PNG = 'iVBORw0KGgoAAAANSUhEUgAAAGAAAABACAIAAABqVuVZAAABJElEQVR42u3bTRHCMBCGYZKJDk4oQUElIIIDIhCBhCrgjAjEIID8Nyns7rtHaDfMM9+WUlp3vL0OVLo8BAABBBBAAAEEEEBUrEL+7fdy+dUnO60PEsSIAQQQQBRAAAEEkNQzaXH1XK/R18/L3TRQyuV7g1apoJ4mun09kzel07FjsEbTGiVvU6e+lbesU9OQ8yBdB+nh8Sm29ejkmzNiWkZsanwyS5Agfs1bANphvlILkSBGDCCAAAJIbhUumP3JPSgkqFDd/0lsX4gR4xhkBGiHKYsuQYIUjdjUEKWaC0vQJKNMW0ZM3bfY8BDlG4pM0ECjYisn+pnVLVcaK5VlH4O6o1S/o9Px1HN9lFpNnbLHwoffgud4bp4fqwABBBBAAAFktD4C6FB4/ZeUJQAAAABJRU5ErkJggg==';

async function shot(name) {
  shotNumber += 1;
  const file = path.join(ARTIFACTS, `${String(shotNumber).padStart(2, '0')}-${name}.png`);
  try {
    await page.screenshot({ path: file });
    log(`  screenshot ${path.relative(root, file)}`);
  } catch (err) {
    log(`  (no screenshot ${name}: ${err.message.split('\n')[0]})`);
  }
}

async function scenario(name, timeoutMs, fn, { setup = false } = {}) {
  if (ONLY && !setup && !ONLY.has(name)) return;
  const started = Date.now();
  log(`▶ ${name}`);
  try {
    await withTimeout(fn(), timeoutMs, name);
    results.push({ name, ok: true, seconds: (Date.now() - started) / 1000 });
    log(`✔ ${name} (${((Date.now() - started) / 1000).toFixed(1)}s)`);
  } catch (err) {
    results.push({ name, ok: false, seconds: (Date.now() - started) / 1000, error: err.message });
    log(`✘ ${name}: ${err.message.split('\n').slice(0, 6).join('\n    ')}`);
    await shot(`${name}-FAILED`);
    if (setup) throw err; // nothing after it can run
  }
}

async function startFake() {
  const child = startGroup('fake provider', PYTHON, [path.join(here, 'fake_server.py')], { env: baseEnv, stdio: ['pipe', 'pipe', 'pipe'] });
  const line = await new Promise((resolve, reject) => {
    let buffer = '';
    const timer = setTimeout(() => reject(new Error('the fake provider did not start in 15s')), 15_000);
    child.stdout.on('data', (data) => {
      buffer += data;
      const nl = buffer.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(timer);
        resolve(buffer.slice(0, nl));
      }
    });
    child.stderr.on('data', (data) => process.stderr.write(`fake provider: ${data}`));
    child.on('exit', (code) => reject(new Error(`the fake provider exited (${code})`)));
  });
  return { child, ...JSON.parse(line) };
}

async function script(name) {
  return (await json(`${fake.control}/scenario/${name}`, { method: 'POST' })).requests;
}

async function requestsSince(mark) {
  return json(`${fake.control}/requests?since=${mark}`);
}

// ---- chat helpers ---------------------------------------------------------------------------------------------
const chat = () => chatFrame(page);
const byTest = (id) => chat().locator(`[data-testid="${id}"]`);

async function send(text) {
  const input = byTest('chat-input');
  await input.click();
  await input.fill(text);
  await page.keyboard.press('Enter');
}

const count = (id) => byTest(id).count();
const nbsp = (text) => text.replace(/\u00a0/g, ' ');
async function turnEnds(status) {
  return chat().locator(`[data-testid="turn-end"][data-status="${status}"]`).count();
}

/** Clicks an action of the chat view's title bar (New Session, Show Sessions…). */
async function clickViewAction(label) {
  const action = page.locator(`.part.sidebar .title-actions .action-label[aria-label^="${label}"], `
    + `.pane-header .actions .action-label[aria-label^="${label}"]`).first();
  await action.waitFor({ state: 'visible', timeout: 5000 });
  await action.click();
}

/** Opens a stored session through Sunwell: Show Sessions (the quick pick), by its title. */
async function openSessionFromPicker(title) {
  await clickViewAction('Show Sessions');
  const row = page.locator('.quick-input-list .monaco-list-row').filter({ hasText: title }).first();
  try {
    await row.waitFor({ timeout: 10_000 });
  } catch (err) {
    const rows = await page.locator('.quick-input-list .monaco-list-row').allInnerTexts();
    await page.keyboard.press('Escape'); // the next scenario needs the quick input closed
    throw new Error(`no session "${title}" in Show Sessions (${JSON.stringify(rows)}): ${err.message}`);
  }
  await row.click();
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: 10_000 }).catch(() => undefined);
}

async function waitTurnEnd(before, status, timeoutMs = 30_000) {
  await until(async () => (await count('turn-end')) > before, { timeoutMs, message: 'the turn did not end' });
  const last = byTest('turn-end').last();
  const got = await last.getAttribute('data-status');
  check(got === status, `turn ended "${got}", expected "${status}": ${await last.innerText()}`);
}

/** The sidecars code-server runs for this test: `[{pid, python}]` (the interpreter is the command's first word). */
function sidecars() {
  const out = [];
  for (const pid of codeServer ? descendants(codeServer.pid) : []) {
    try {
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
      if (args.includes('sunwell') && args.includes('serve')) out.push({ pid, python: args[0] });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** The interpreter `sunwell.python` is set to: one that exists (issue 34 bug 6: on a fresh clone the repository's
 *  .venv is not there): that .venv when it is, else a venv of the test's own that sees the engine's packages. */
function configuredPython() {
  const repoVenv = path.join(root, '.venv', 'bin', 'python');
  return SIDECAR_PYTHON || (existsSync(repoVenv) ? repoVenv : otherVenv());
}

/** A second interpreter with Sunwell: a venv whose site-packages point (a .pth) at the running engine's. */
function otherVenv() {
  const dir = path.join(E2E, 'other-venv');
  if (existsSync(path.join(dir, 'bin', 'python'))) return path.join(dir, 'bin', 'python');
  const running = sidecars()[0]?.python;
  check(running, 'no engine runs to take its packages from');
  const made = spawnSync(running, ['-m', 'venv', '--without-pip', dir], { encoding: 'utf8' });
  check(made.status === 0, `python -m venv failed: ${made.stderr}`);
  const where = (python) => spawnSync(python, ['-c', 'import sysconfig; print(sysconfig.get_path("purelib"))'], { encoding: 'utf8' }).stdout.trim();
  const python = path.join(dir, 'bin', 'python');
  writeFileSync(path.join(where(python), 'engine.pth'), `${where(running)}\n`);
  return python;
}

/** Types a value into a setting of the Settings UI (Preferences: Open Settings (UI)), as a user does. */
/** Types `text` into the input box a command just opened, once it shows (never the palette: F1 there would open the
 *  palette in its place), and accepts it. */
async function answerInputBox(text) {
  const box = page.locator('.quick-input-widget');
  await box.waitFor({ state: 'visible', timeout: 10_000 });
  await box.locator('input.input').first().fill(text);
  await page.keyboard.press('Enter');
  await box.waitFor({ state: 'hidden', timeout: 10_000 }).catch(() => undefined);
}

async function setInSettingsUi(key, label, value) {
  const step = (what) => (err) => { throw new Error(`Settings UI, ${key}: ${what} (${err.message.split('\n')[0]})`); };
  await runCommand(page, 'Preferences: Open Settings (UI)');
  await page.locator('.settings-editor .settings-header').first().waitFor({ timeout: 10_000 })
    .catch(step('the Settings editor did not open'));
  await page.locator('.settings-editor .suggest-input-container').first().click(); // the search box
  await page.keyboard.press('Control+A');
  await page.keyboard.type(key);
  const item = page.locator('.settings-editor .setting-item-contents').filter({ hasText: `Sunwell: ${label}` }).first();
  // A machine-scoped setting (endpoints, the interpreter) is not in the User tab of a remote window such as
  // code-server's: it is under Remote, where the user finds it.
  if (!(await item.waitFor({ timeout: 3000 }).then(() => true, () => false))) {
    await page.locator('.settings-editor .settings-tabs-widget .action-label').filter({ hasText: 'Remote' }).first().click();
  }
  await item.waitFor({ timeout: 10_000 }).catch(async (err) => {
    const tabs = await page.locator('.settings-editor .settings-tabs-widget .action-label').allInnerTexts().catch(() => []);
    const found = await page.locator('.settings-editor .settings-count-widget').innerText().catch(() => '?');
    step(`no "Sunwell: ${label}" in the tabs ${JSON.stringify(tabs)} (${found})`)(err);
  });
  const input = item.locator('input').first();
  await input.click();
  await input.fill('');
  // key by key, as a person types: the Settings UI saves as it goes, so the engine sees several changes in a row
  await page.keyboard.type(value, { delay: 120 });
  await page.keyboard.press('Tab');
  // Saved: the Settings editor redraws the setting once the value is written, and takes the focus back then (a
  // palette opened before that closes under the next step). User or Remote settings, wherever the UI wrote it.
  const saved = () => ['User', 'Machine'].some((where) => {
    let text = '';
    try {
      text = readFileSync(path.join(DATA, where, 'settings.json'), 'utf8');
    } catch {
      return false;
    }
    const written = text.includes(`"${key}": ${JSON.stringify(value)}`);
    return value === '' ? !text.includes(`"${key}"`) || written : written;
  });
  await until(async () => saved(), { timeoutMs: 10_000, message: `${key} was not saved as ${JSON.stringify(value)}` })
    .catch(step('the value was not saved'));
  await sleep(800);
  // The focus away from the settings' controls (F1 does not open the palette from them), onto the editor's tab.
  await page.locator('.tabs-container .tab.active').first().click();
}

// ---- run --------------------------------------------------------------------------------------------------------
async function main() {
  fake = await startFake();
  log(`fake provider ${fake.url} (control ${fake.control}); temp dir ${E2E}`);

  const port = await freePort();
  const csConfig = path.join(E2E, 'cs-config.yaml');
  writeFileSync(csConfig, 'auth: none\n');
  const csArgs = ['--config', csConfig, '--user-data-dir', DATA, '--extensions-dir', EXT];
  const settings = {
    'security.workspace.trust.enabled': false,
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'workbench.enableExperiments': false,
    'extensions.autoUpdate': false,
    'extensions.autoCheckUpdates': false,
    'update.mode': 'none',
    'telemetry.telemetryLevel': 'off',
    'sunwell.model': 'openai:gpt-4o',
    'sunwell.openaiBaseUrl': `${fake.url}/v1`,
    'sunwell.approvalTimeoutSec': 300,
    'sunwell.network.allow': ['127.0.0.1'], // the fake server's page (web-fetch): a private address, listed exactly
    ...(SIDECAR_PYTHON ? { 'sunwell.python': SIDECAR_PYTHON } : {}),
  };
  writeFileSync(path.join(DATA, 'User', 'settings.json'), JSON.stringify(settings, null, 2));

  await scenario('install-vsix', 120_000, async () => {
    const out = spawnSync(CODE_SERVER, [...csArgs, '--install-extension', VSIX], { env: isolated, encoding: 'utf8', timeout: 110_000 });
    writeFileSync(path.join(LOGS, 'install-extension.log'), `${out.stdout}\n${out.stderr}`);
    check(out.status === 0 && /successfully installed/i.test(out.stdout), `code-server --install-extension failed (${out.status}): ${out.stdout}${out.stderr}`);
  }, { setup: true });

  await scenario('start-code-server', 60_000, async () => {
    const logFd = openSync(path.join(LOGS, 'code-server.log'), 'w');
    codeServer = startGroup('code-server', CODE_SERVER, [...csArgs, '--auth', 'none', '--bind-addr', `127.0.0.1:${port}`,
      '--disable-telemetry', '--disable-update-check', '--disable-workspace-trust', '--disable-getting-started-override', WS],
    { env: { ...isolated, OPENAI_API_KEY: 'sk-e2e-fake' }, cwd: WS, logFd });
    closeSync(logFd);
    await waitForHttp(`http://127.0.0.1:${port}/healthz`, 50_000, 'code-server');
  }, { setup: true });

  await scenario('open-workbench', 60_000, async () => {
    browser = await chromium.launchPersistentContext(path.join(E2E, 'chromium'), {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1400, height: 860 },
      deviceScaleFactor: 1,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
      env: isolated,
    });
    page = browser.pages()[0] ?? await browser.newPage();
    page.setDefaultTimeout(15_000);
    // Copy buttons write through VS Code to the browser's clipboard, which the scenarios read back.
    await browser.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: `http://127.0.0.1:${port}` });
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(WS)}`);
    await waitForWorkbench(page);
    await sleep(2000); // let the extension host come up
  }, { setup: true });

  // (a) open the chat from the palette
  await scenario('open-chat', 45_000, async () => {
    await runCommand(page, 'Sunwell: Open Chat');
    await byTest('chat-input').waitFor({ timeout: 20_000 });
    if (SIDECAR_PYTHON) return;
    // The first run: no `sunwell` for python3, so the chat offers to install the bundled package.
    await until(async () => (await byTest('sidecar-banner').isVisible()) && (await byTest('install-button').isVisible()),
      { timeoutMs: 30_000, message: 'the chat did not offer to install the Python package' });
    await shot('open-chat-install-offer');
  }, { setup: true });

  // The real first-run path: Install puts the .vsix's wheels into a private venv; the engine starts.
  await scenario('install-python-package', 240_000, async () => {
    if (!SIDECAR_PYTHON) await byTest('install-button').click();
    await until(async () => !(await byTest('sidecar-banner').isVisible()), {
      timeoutMs: 230_000, every: 500,
      message: 'the engine did not become ready',
    });
    await clearNotifications(page);
    await byTest('welcome').waitFor({ timeout: 5000 });
    await shot('chat-ready');
  }, { setup: true });

  // (b) a message, and its answer streaming in
  await scenario('stream', 45_000, async () => {
    await script('chat');
    const ends = await count('turn-end');
    await send('Say hello');
    await byTest('user-message').last().waitFor();
    check((await byTest('user-message').last().innerText()).includes('Say hello'), 'the user message is not shown');
    const seen = new Set();
    let streamingClass = false;
    await until(async () => {
      const msg = byTest('assistant-message').last();
      if (await msg.count()) {
        seen.add((await msg.innerText()).length);
        streamingClass ||= /\bstreaming\b/.test((await msg.getAttribute('class')) ?? '');
      }
      return (await count('turn-end')) > ends;
    }, { timeoutMs: 30_000, every: 40, message: 'the answer did not finish' });
    const lengths = [...seen].filter((n) => n > 0);
    check(lengths.length >= 3, `the answer did not stream (text lengths seen: ${lengths.join(', ')})`);
    check(streamingClass, 'the answer was never marked as streaming');
    const text = await byTest('assistant-message').last().innerText();
    check(text.includes("Hello! I'm Sunwell"), `unexpected answer: ${text}`);
    check((await chat().locator('.message.assistant strong').last().innerText()) === 'Sunwell', 'markdown was not rendered');
    check(await chat().locator('.message.assistant pre code').count() >= 1, 'no code block in the answer');
    await waitTurnEnd(ends, 'completed');
    const meter = byTest('context-meter');
    await until(async () => (await meter.isVisible()) && /% of /.test(await meter.innerText()),
      { timeoutMs: 10_000, every: 100, message: 'the context meter did not show after the turn' });
    log(`  context meter: ${await meter.innerText()} (${await meter.getAttribute('title')})`);
    await shot('streamed-answer');
    // Issue 46 item 5: Copy under the finished answer puts the answer on the clipboard as markdown.
    const copy = byTest('turn-end').last().locator('[data-testid="copy-answer"]');
    check(await copy.isVisible(), 'no Copy under the finished answer');
    await copy.click();
    const copied = await until(async () => {
      const text = await page.evaluate(() => navigator.clipboard.readText()).catch(() => '');
      return text.includes('**Sunwell**') ? text : false;
    }, { timeoutMs: 5000, message: 'the clipboard does not hold the answer as markdown' });
    check(copied.includes('```python') && copied.includes('def add(a, b):'), `the copied answer lost its code block: ${copied.slice(0, 200)}`);
  });

  // (c) a tool card fills in: read_file, from arguments to result
  await scenario('tool-card', 45_000, async () => {
    await script('read');
    const ends = await count('turn-end');
    await send('What does a.txt say?');
    const card = chat().locator('[data-testid="tool-card"][data-tool="read_file"]').last();
    await card.waitFor({ timeout: 20_000 });
    const statuses = new Set();
    await until(async () => {
      statuses.add(await card.getAttribute('data-status'));
      return statuses.has('ok') || statuses.has('error');
    }, { timeoutMs: 20_000, every: 30, message: 'the tool card did not get a result' });
    check(statuses.has('ok'), `read_file did not succeed: ${[...statuses].join(' → ')}`);
    await waitTurnEnd(ends, 'completed');
    check((await card.innerText()).includes('a.txt'), 'the card does not name the file');
    await card.locator('[data-testid="tool-head"]').click();
    const output = card.locator('[data-testid="tool-output"]');
    await output.waitFor();
    check((await output.innerText()).includes('hello from the demo'), `unexpected output: ${await output.innerText()}`);
    check((await byTest('assistant-message').last().innerText()).includes('hello from the demo'), 'no final answer');
    log(`  card statuses: ${[...statuses].join(' → ')}`);
    await shot('tool-card');
  });

  // (d) a write asks first: the card, Show diff in VS Code's diff editor, Allow writes the file
  await scenario('approve-write', 60_000, async () => {
    await script('write-allow');
    const ends = await count('turn-end');
    await send('Write a todo list to notes/todo.md');
    const approval = chat().locator('[data-testid="approval-card"][data-state="pending"]').last();
    await approval.waitFor({ timeout: 20_000 });
    const card = chat().locator('[data-testid="tool-card"][data-tool="write_file"]').last();
    check(await card.getAttribute('data-status') === 'awaitingApproval', `card status ${await card.getAttribute('data-status')}`);
    check((await approval.innerText()).includes('notes/todo.md'), `the approval does not name the file: ${await approval.innerText()}`);
    for (const id of ['approval-allow', 'approval-allow-session', 'approval-deny', 'approval-show-diff']) {
      check(await approval.locator(`[data-testid="${id}"]`).isVisible(), `no ${id} button`);
    }
    await clearNotifications(page);
    await shot('approval-card');
    await approval.locator('[data-testid="approval-show-diff"]').click();
    const diff = page.locator('.monaco-diff-editor').first();
    await diff.waitFor({ timeout: 15_000 });
    await until(async () => nbsp(await diff.innerText()).includes('ship it'), { message: 'the diff does not show the new content' });
    const tab = page.locator('.tabs-container .tab.active');
    const tabText = await tab.innerText();
    check(/todo\.md/.test(tabText), `the diff's tab is "${tabText}"`);
    const allowInTitle = page.locator('.editor-actions .action-label[aria-label^="Allow"]').first();
    check(await allowInTitle.isVisible(), 'the diff editor has no Allow action in its title bar');
    await shot('diff-editor');
    check(!existsSync(path.join(WS, 'notes', 'todo.md')), 'the file was written before it was allowed');
    await approval.locator('[data-testid="approval-allow"]').click();
    await waitTurnEnd(ends, 'completed');
    const written = path.join(WS, 'notes', 'todo.md');
    check(existsSync(written), 'Allow did not write notes/todo.md');
    check(readFileSync(written, 'utf8').includes('ship it'), `unexpected content: ${readFileSync(written, 'utf8')}`);
    check(await card.getAttribute('data-status') === 'ok', `the card ended ${await card.getAttribute('data-status')}`);
    const answered = card.locator('[data-testid="approval-card"]');
    check(await answered.getAttribute('data-state') === 'answered', 'the approval card was not marked answered');
    await until(async () => (await page.locator('.monaco-diff-editor').count()) === 0, { timeoutMs: 5000, message: 'the diff editor stayed open after the answer' });
    await shot('write-allowed');
  });

  // (d) Deny: the file stays, and the model is told
  await scenario('deny-write', 60_000, async () => {
    const mark = await script('write-deny');
    const ends = await count('turn-end');
    await send('Make main return 0');
    const approval = chat().locator('[data-testid="approval-card"][data-state="pending"]').last();
    await approval.waitFor({ timeout: 20_000 });
    check((await approval.innerText()).includes('src/app.py'), `the approval does not name the file: ${await approval.innerText()}`);
    await approval.locator('[data-testid="approval-deny"]').click();
    await waitTurnEnd(ends, 'completed');
    check(readFileSync(path.join(WS, 'src', 'app.py'), 'utf8') === APP_PY, 'Deny did not leave src/app.py untouched');
    const requests = await requestsSince(mark);
    check(requests.length === 2, `expected 2 model requests, got ${requests.length}`);
    const toolMessages = requests[1].body.messages.filter((m) => m.role === 'tool');
    const last = toolMessages.at(-1);
    check(last && /denied/i.test(JSON.stringify(last.content)), `the model was not told of the denial: ${JSON.stringify(last)}`);
    log(`  the model was told: ${JSON.stringify(last.content).slice(0, 160)}`);
    const card = chat().locator('[data-testid="tool-card"][data-tool="write_file"]').last();
    check(await card.getAttribute('data-status') === 'error', `the denied card is ${await card.getAttribute('data-status')}`);
    check((await byTest('assistant-message').last().innerText()).includes('you denied'), 'no answer after the denial');
    await shot('write-denied');
  });

  // (e) Stop cancels a long turn
  await scenario('stop', 45_000, async () => {
    await script('slow');
    const ends = await count('turn-end');
    const answers = await count('assistant-message');
    await send('Count slowly');
    await byTest('stop-button').waitFor({ state: 'visible', timeout: 10_000 });
    const answer = byTest('assistant-message').nth(answers); // this turn's answer, not the last one before it
    await until(async () => (await count('turn-end')) === ends && (await answer.count()) > 0 && (await answer.innerText()).length > 60,
      { timeoutMs: 15_000, message: 'the slow answer did not start streaming' });
    await byTest('stop-button').click();
    await waitTurnEnd(ends, 'cancelled', 10_000);
    const length = (await answer.innerText()).length;
    await sleep(1500);
    check((await answer.innerText()).length === length, 'text kept arriving after Stop');
    check(length < 600, `the answer ran to ${length} characters: it was not stopped`);
    check((await answer.count()) > 0 && (await answer.innerText()).startsWith('Counting slowly'), 'the partial answer is not kept after Stop');
    check(await byTest('send-button').isVisible(), 'the send button did not come back');
    check(!(await byTest('stop-button').isVisible()), 'the stop button is still shown');
    await shot('stopped');
  });

  // (f) reload the window: the session is back
  await scenario('reload', 60_000, async () => {
    const before = await byTest('user-message').allInnerTexts();
    check(before.length >= 1, 'nothing to restore');
    await script('none');
    await runCommand(page, 'Developer: Reload Window');
    await page.waitForLoadState('domcontentloaded');
    await waitForWorkbench(page);
    await until(async () => (await chat().locator('[data-testid="chat-input"]').count()) > 0, { timeoutMs: 20_000, message: 'the chat did not come back by itself' })
      .catch(async () => runCommand(page, 'Sunwell: Open Chat'));
    await until(async () => (await byTest('user-message').count()) >= before.length, { timeoutMs: 30_000, message: 'the session was not restored' });
    const after = await byTest('user-message').allInnerTexts();
    check(JSON.stringify(after) === JSON.stringify(before), `restored ${JSON.stringify(after)}, had ${JSON.stringify(before)}`);
    check((await chat().locator('[data-testid="tool-card"][data-tool="read_file"]').count()) >= 1, 'the tool card was not restored');
    await until(async () => !(await byTest('sidecar-banner').isVisible()), { timeoutMs: 30_000, message: 'the engine did not come back after the reload' });
    await clearNotifications(page);
    await shot('reloaded');
  });

  // (f) New Session while a turn runs: that turn stops, the new chat shows nothing of it, and the next message
  // starts a new session (its request carries no old history). Then the old session, reopened, is replayed from
  // the sidecar's log: the stopped turn is there, ended as cancelled.
  await scenario('new-session-while-running', 90_000, async () => {
    await script('slow');
    const answers = await count('assistant-message');
    await send('Count to four hundred');
    const answer = byTest('assistant-message').nth(answers);
    await until(async () => (await answer.count()) > 0 && (await answer.innerText()).length > 60,
      { timeoutMs: 15_000, message: 'the slow answer did not start streaming' });
    await clickViewAction('New Session');
    const empty = async () => {
      const counts = await Promise.all(['user-message', 'assistant-message', 'tool-card', 'turn-end'].map(count));
      return counts.every((n) => n === 0) ? true : counts;
    };
    await until(empty, { timeoutMs: 5000, message: 'the new chat still shows the old conversation (user, answers, tools, ends)' });
    await byTest('welcome').waitFor({ state: 'visible', timeout: 5000 });
    await sleep(2000); // the old turn's last deltas, its `done` and its answer have arrived by now
    check(await empty() === true, `the old turn leaked into the new chat: ${JSON.stringify(await empty())}`);
    check(await byTest('send-button').isVisible(), 'the new chat is still busy (no send button)');
    await shot('new-session-while-running');

    const mark = await script('chat');
    const ends = await count('turn-end');
    await send('A fresh start');
    await waitTurnEnd(ends, 'completed');
    check(JSON.stringify(await byTest('user-message').allInnerTexts()) === JSON.stringify(['A fresh start']),
      `the new chat shows ${JSON.stringify(await byTest('user-message').allInnerTexts())}`);
    const requests = await requestsSince(mark);
    check(requests.length === 1, `expected 1 model request, got ${requests.length}`);
    const sent = requests[0].body.messages.filter((m) => m.role !== 'system').map((m) => m.content);
    check(JSON.stringify(sent) === JSON.stringify(['A fresh start']), `the next message went to the old session: it sent ${JSON.stringify(sent).slice(0, 300)}`);
    await shot('new-session-next-message');

    // The old session, replayed from the log: the stopped turn ended as cancelled (it was stopped, not left running).
    await openSessionFromPicker('Say hello');
    await until(async () => (await byTest('user-message').allInnerTexts()).at(-1) === 'Count to four hundred',
      { timeoutMs: 15_000, message: 'the old session was not reopened' });
    const status = await byTest('turn-end').last().getAttribute('data-status');
    check(status === 'cancelled', `the stopped turn ended "${status}" in the log, expected "cancelled"`);
    check((await chat().locator('[data-testid="tool-card"][data-tool="read_file"]').count()) >= 1, 'the replay lost the read_file card');
    const verdicts = await byTest('approval-result').allInnerTexts();
    check(verdicts.some((t) => t.includes('Allowed')) && verdicts.some((t) => t.includes('Denied')),
      `the replay does not say how the writes were answered: ${JSON.stringify(verdicts)}`);
    check((await byTest('user-message').allInnerTexts()).includes('A fresh start') === false, 'the new session\'s line is in the old one');
    await shot('old-session-replayed');
  });

  // (f) Switching sessions while a turn runs: the same, the other way round.
  await scenario('switch-session-while-running', 60_000, async () => {
    await script('slow');
    const answers = await count('assistant-message');
    await send('Count once more');
    const answer = byTest('assistant-message').nth(answers);
    await until(async () => (await answer.count()) > 0 && (await answer.innerText()).length > 60,
      { timeoutMs: 15_000, message: 'the slow answer did not start streaming' });
    await openSessionFromPicker('A fresh start');
    await until(async () => JSON.stringify(await byTest('user-message').allInnerTexts()) === JSON.stringify(['A fresh start']),
      { timeoutMs: 15_000, message: 'the other session was not opened' });
    await sleep(2000);
    check(JSON.stringify(await byTest('user-message').allInnerTexts()) === JSON.stringify(['A fresh start']),
      `the switched-to session shows ${JSON.stringify(await byTest('user-message').allInnerTexts())}`);
    const texts = await byTest('assistant-message').allInnerTexts();
    check(!texts.some((t) => t.startsWith('Counting slowly')), 'the running turn\'s answer leaked into the other session');
    check(await byTest('send-button').isVisible(), 'the opened session is still busy (no send button)');
    check(await byTest('turn-end').last().getAttribute('data-status') === 'completed', 'the opened session gained a turn end');
    await shot('switched-while-running');
  });

  // Issue 17 bug 2: a setting changed in the Settings UI restarts the engine with the interpreter `sunwell.python`
  // names, every time (python3 on PATH has no Sunwell here, as on a fresh machine).
  await scenario('settings-restart', 120_000, async () => {
    const python = configuredPython();
    const ready = async () => !(await byTest('sidecar-banner').isVisible());
    if (!sidecars().some((s) => s.python === python)) {
      await setInSettingsUi('sunwell.python', 'Python', python);
      await until(async () => sidecars().some((s) => s.python === python) && (await ready()),
        { timeoutMs: 45_000, message: `the engine did not restart with ${python}` });
    }
    const [first] = sidecars();
    log(`  sidecar ${first.pid}: ${first.python}`);
    await setInSettingsUi('sunwell.baseUrl', 'Base Url', 'http://127.0.0.1:9/v1');
    await shot('settings-ui-baseurl');
    await until(async () => {
      const now = sidecars();
      return now.length === 1 && now[0].pid !== first.pid && (await ready()) ? now : false;
    }, { timeoutMs: 45_000, message: 'the engine did not come back after the setting changed' }).catch(async (err) => {
      throw new Error(`${err.message}; banner: ${await byTest('sidecar-banner').innerText().catch(() => '')}`);
    });
    const [second] = sidecars();
    log(`  restarted sidecar ${second.pid}: ${second.python}`);
    check(second.python === python, `the engine restarted with ${second.python}, not sunwell.python (${python})`);
    await clearNotifications(page);
    await runCommand(page, 'Sunwell: Open Chat');
    await script('chat');
    const ends = await count('turn-end');
    await send('Still there?');
    await waitTurnEnd(ends, 'completed');
    await shot('settings-restart-chat');
    await setInSettingsUi('sunwell.baseUrl', 'Base Url', '');
    if (!SIDECAR_PYTHON) await setInSettingsUi('sunwell.python', 'Python', ''); // back to the private venv
    await runCommand(page, 'View: Close All Editors');
    await sleep(1500);
    await until(ready, { timeoutMs: 45_000, message: 'the engine did not come back after the settings were restored' });
  });

  // Issue 34 bug 1: with `sunwell.python` set as a user sets it, Reload Window brings the engine back with that
  // interpreter (it showed "not installed for python3" and Install, and Restart Sidecar did not help).
  await scenario('reload-python', 180_000, async () => {
    const python = configuredPython();
    const ready = async () => !(await byTest('sidecar-banner').isVisible());
    const runsWith = async () => sidecars().length === 1 && sidecars()[0].python === python && (await ready());
    if (!(await runsWith())) {
      await setInSettingsUi('sunwell.python', 'Python', python);
      await runCommand(page, 'View: Close All Editors');
      await until(runsWith, { timeoutMs: 45_000, message: `the engine did not start with ${python}` });
    }
    await runCommand(page, 'Developer: Reload Window');
    await page.waitForLoadState('domcontentloaded');
    await waitForWorkbench(page);
    await until(async () => (await chat().locator('[data-testid="chat-input"]').count()) > 0, { timeoutMs: 20_000, message: 'no chat' })
      .catch(async () => runCommand(page, 'Sunwell: Open Chat'));
    await until(runsWith, { timeoutMs: 60_000, message: `after the reload the engine does not run with ${python}` })
      .catch(async (err) => {
        throw new Error(`${err.message}; engines: ${JSON.stringify(sidecars())}; banner: ${await byTest('sidecar-banner').innerText().catch(() => '')}`);
      });
    await clearNotifications(page);
    await script('chat');
    const ends = await count('turn-end');
    await send('Still here after the reload?');
    await waitTurnEnd(ends, 'completed');
    await shot('reload-python');
    if (!SIDECAR_PYTHON) {
      await setInSettingsUi('sunwell.python', 'Python', ''); // back to the private venv
      await runCommand(page, 'View: Close All Editors');
      await until(ready, { timeoutMs: 45_000, message: 'the engine did not come back with the private venv' });
      await runCommand(page, 'Sunwell: Open Chat');
    }
  });

  // Issue 17 bug 3: a complete `::command` typed by hand runs on the first Enter (the completion list stays out of
  // the way); a partial one is still completed by Enter.
  await scenario('command-enter', 45_000, async () => {
    await script('none');
    const outputs = await count('command-output');
    const input = byTest('chat-input');
    await input.click();
    await input.fill('');
    await page.keyboard.type('::help', { delay: 40 });
    await byTest('command-completions').waitFor({ state: 'visible', timeout: 5000 });
    await shot('command-typed');
    await page.keyboard.press('Enter');
    await until(async () => (await count('command-output')) > outputs,
      { timeoutMs: 10_000, message: `one Enter did not run ::help (the input holds "${await input.inputValue()}")` });
    check((await input.inputValue()) === '', `the input still holds "${await input.inputValue()}"`);
    check((await byTest('command-output').last().innerText()).includes('::context'), 'the ::help output lists no commands');
    // A prefix: Enter completes it (and sends nothing).
    await page.keyboard.type('::cont', { delay: 40 });
    await byTest('command-completions').waitFor({ state: 'visible', timeout: 5000 });
    await page.keyboard.press('Enter');
    await until(async () => (await input.inputValue()) === '::context ', { timeoutMs: 3000, message: 'Enter did not complete ::cont' });
    check((await count('command-output')) === outputs + 1, 'Enter on a prefix sent it');
    await page.keyboard.press('Enter');
    await until(async () => (await count('command-output')) > outputs + 1, { timeoutMs: 10_000, message: '::context did not run' });
    await shot('command-ran');
  });

  // Issue 17 bug 6: a server that reports no usage (llama.cpp): the turn and the footer show Sunwell's estimate,
  // marked as such.
  await scenario('usage-estimate', 45_000, async () => {
    await script('no-usage');
    const ends = await count('turn-end');
    await send('How many tokens was that?');
    await waitTurnEnd(ends, 'completed');
    const footer = byTest('usage');
    await until(async () => (await footer.innerText()).startsWith('≈'),
      { timeoutMs: 10_000, message: `the footer shows no estimate: "${await footer.innerText()}"` });
    check(/estimated/i.test(await footer.getAttribute('title')), `the estimate is not marked: ${await footer.getAttribute('title')}`);
    const turnUsage = byTest('turn-end').last().locator('[data-testid="turn-usage"]');
    check(/^≈\d/.test(await turnUsage.innerText()), `the turn shows no estimate: "${await turnUsage.innerText()}"`);
    log(`  footer: ${await footer.innerText()} (${await footer.getAttribute('title')}); turn: ${await turnUsage.innerText()}`);
    await shot('usage-estimate');
  });

  // Issue 17 bug 8: seconds before the first token show "Waiting for the model…" with the time passing, then the answer.
  await scenario('waiting', 45_000, async () => {
    await script('slow-start');
    const ends = await count('turn-end');
    await send('Take your time');
    const waiting = byTest('waiting');
    await waiting.waitFor({ state: 'visible', timeout: 5000 });
    await until(async () => /Waiting for the model… [2-9] s/.test(await waiting.innerText()),
      { timeoutMs: 6000, message: 'the waiting line does not count the seconds' });
    log(`  ${await waiting.innerText()}`);
    await shot('waiting-for-model');
    await waitTurnEnd(ends, 'completed');
    check(await waiting.isHidden(), 'the waiting line stayed after the answer');
    check((await byTest('assistant-message').last().innerText()).includes('here is the answer'), 'no answer after the wait');
  });

  // Issue 17 bug 10: a dead endpoint: the error names the URL and offers Retry and where to change it; fixed in the
  // setting it points to, Retry answers.
  await scenario('retry-endpoint', 150_000, async () => {
    const good = `${fake.url}/v1`;
    const dead = 'http://127.0.0.1:9/v1';
    const ready = async () => !(await byTest('sidecar-banner').isVisible());
    const restarted = async (what) => {
      await sleep(1500);
      await until(ready, { timeoutMs: 45_000, message: `the engine did not come back after ${what}` });
    };
    await setInSettingsUi('sunwell.openaiBaseUrl', 'Openai Base Url', dead);
    await restarted('the dead endpoint');
    await runCommand(page, 'View: Close All Editors');
    await runCommand(page, 'Sunwell: Open Chat');
    await script('chat');
    const ends = await count('turn-end');
    await send('Are you there?');
    await waitTurnEnd(ends, 'error', 60_000);
    const end = byTest('turn-end').last();
    check((await end.locator('[data-testid="failed-url"]').innerText()) === dead, `the error does not name ${dead}: ${await end.innerText()}`);
    for (const id of ['retry-button', 'fix-model', 'fix-key', 'fix-setting']) {
      check(await end.locator(`[data-testid="${id}"]`).isVisible(), `no ${id} under the error`);
    }
    check((await end.locator('[data-testid="fix-setting"]').innerText()).includes('sunwell.openaiBaseUrl'), 'the fix names another setting');
    await clearNotifications(page);
    await shot('endpoint-error');
    // The setting it points to, in the Settings UI, then Retry.
    await end.locator('[data-testid="fix-setting"]').click();
    await page.locator('.settings-editor').first().waitFor({ timeout: 10_000 });
    // Issue 46 item 1: the button opens the settings where this machine-scoped one is read (code-server: Remote), with
    // it listed; the User tab of a remote window does not list it.
    const listed = page.locator('.settings-editor .setting-item-contents').filter({ hasText: 'Sunwell: Openai Base Url' }).first();
    check(await listed.waitFor({ timeout: 5000 }).then(() => true, () => false),
      `the button opened the ${await page.locator('.settings-editor .settings-tabs-widget .action-label.checked').innerText().catch(() => '?')} `
      + 'settings, where sunwell.openaiBaseUrl is not listed');
    await setInSettingsUi('sunwell.openaiBaseUrl', 'Openai Base Url', good);
    await restarted('the endpoint was fixed');
    await runCommand(page, 'View: Close All Editors');
    await runCommand(page, 'Sunwell: Open Chat');
    // Retry takes up the failed turn (docs/events.md "Durable turns"): the same turn, only the failed request again,
    // so its end is replaced, not added to.
    await byTest('turn-end').last().locator('[data-testid="retry-button"]').click();
    await until(async () => (await byTest('turn-end').last().getAttribute('data-status')) === 'completed',
      { timeoutMs: 30_000, message: 'the retried turn did not complete' });
    check((await byTest('user-message').last().innerText()) === 'Are you there?', 'Retry did not send the same message');
    check(await chat().locator('[data-testid="retry-button"][data-action="resume"]').count() === 0,
      'the failure\'s Retry is still offered after the answer'); // the answer's own Retry asks again (issue 34 item 10)
    await shot('retried');
  });

  // Usage and cost: tokens per turn and per session, the cost at the model's price (gpt-4o has a default price),
  // in the footer and in ::context.
  await scenario('usage-cost', 45_000, async () => {
    await runCommand(page, 'Sunwell: New Session');
    await until(async () => (await count('turn-end')) === 0, { timeoutMs: 5000, message: 'New Session did not clear the chat' });
    for (const line of ['First question', 'Second question']) {
      await script('chat');
      const ends = await count('turn-end');
      await send(line);
      await waitTurnEnd(ends, 'completed');
    }
    const session = byTest('session-usage');
    await until(async () => /\$\d/.test(await session.innerText()), { timeoutMs: 10_000, message: 'the footer shows no session cost' });
    const title = await session.getAttribute('title');
    check(/over 2 turns/.test(title) && /openai:gpt-4o/.test(title), `the session figure says: ${title}`);
    const turnUsage = await byTest('turn-end').last().locator('[data-testid="turn-usage"]').innerText();
    check(/in · .* out · \$\d/.test(turnUsage), `the turn shows no cost: ${turnUsage}`);
    log(`  footer: ${await session.innerText()} (${title}); turn: ${turnUsage}`);
    await script('none');
    await send('::context');
    const context = byTest('command-output').last();
    await context.waitFor({ timeout: 10_000 });
    await until(async () => /usage: .*in · .*out.*\$\d.* over 2 turns/.test(await context.innerText()),
      { timeoutMs: 5000, message: '::context lists no usage and cost' });
    await shot('usage-cost');
  });

  // Per-turn Undo on the turn, and Edit & resend of the last message.
  await scenario('undo-edit', 60_000, async () => {
    await script('write-undo');
    const ends = await count('turn-end');
    await send('Create undo-me.txt');
    const approval = chat().locator('[data-testid="approval-card"][data-state="pending"]').last();
    await approval.waitFor({ timeout: 20_000 });
    await approval.locator('[data-testid="approval-allow"]').click();
    await waitTurnEnd(ends, 'completed');
    const file = path.join(WS, 'undo-me.txt');
    check(existsSync(file), 'the file was not written');
    const undo = byTest('turn-end').last().locator('[data-testid="undo-turn"]');
    await undo.waitFor({ timeout: 5000 });
    await shot('undo-button');
    await undo.click();
    await until(() => !existsSync(file), { timeoutMs: 10_000, message: 'Undo did not remove the file the turn created' });
    await byTest('turn-end').last().locator('[data-testid="turn-undone"]').waitFor({ timeout: 5000 });
    check(await byTest('undo-turn').count() === 0, 'Undo is still offered');
    await clearNotifications(page);
    // Edit & resend: the last line comes back into the input, changed, and goes again.
    await byTest('user-message').last().locator('[data-testid="edit-message"]').click();
    const input = byTest('chat-input');
    check((await input.inputValue()) === 'Create undo-me.txt', `the input holds "${await input.inputValue()}"`);
    await input.fill('Create nothing, just say hello');
    await script('chat');
    const again = await count('turn-end');
    await page.keyboard.press('Enter');
    // Issue 34 item 8: the edited line takes its exchange's place, so as many turn ends once it is answered
    await until(async () => (await byTest('user-message').last().innerText()) === 'Create nothing, just say hello'
      && (await count('turn-end')) === again && (await byTest('turn-end').last().getAttribute('data-status')) === 'completed'
      && (await byTest('send-button').isVisible()), { timeoutMs: 30_000, message: 'the edited line was not answered in its exchange\'s place' });
    check((await byTest('user-message').last().innerText()) === 'Create nothing, just say hello', 'the edited line was not sent');
    await shot('undone-and-resent');
  });

  // Deny with a note: the words typed beside Deny reach the model with the denial.
  await scenario('deny-note', 60_000, async () => {
    const mark = await script('write-deny-note');
    const ends = await count('turn-end');
    await send('Make main return 1');
    const approval = chat().locator('[data-testid="approval-card"][data-state="pending"]').last();
    await approval.waitFor({ timeout: 20_000 });
    const note = 'keep 42, the tests depend on it';
    await approval.locator('[data-testid="approval-deny-note"]').fill(note);
    await shot('deny-note-typed');
    await approval.locator('[data-testid="approval-deny"]').click();
    await waitTurnEnd(ends, 'completed');
    check(readFileSync(path.join(WS, 'src', 'app.py'), 'utf8') === APP_PY, 'Deny did not leave src/app.py untouched');
    const requests = await requestsSince(mark);
    const told = requests.at(-1)?.body.messages.filter((m) => m.role === 'tool').at(-1);
    log(`  the model was told: ${JSON.stringify(told?.content).slice(0, 200)}`);
    check(told && /denied/i.test(JSON.stringify(told.content)), 'the model was not told of the denial');
    check(JSON.stringify(told.content).includes(note), `the model did not get the note: ${JSON.stringify(told?.content)}`);
    await shot('deny-note-sent');
  });

  // Context mentions: `@` opens a fuzzy picker of workspace files and @selection/@problems/@terminal; each pick is a
  // removable chip, sent with the line (the model gets the file and the problems), shown on the line, listed by ::context.
  await scenario('mentions', 60_000, async () => {
    const mark = await script('chat');
    const input = byTest('chat-input');
    await input.click();
    await input.fill('');
    await page.keyboard.type('Explain @sapp', { delay: 30 }); // fuzzy: s(rc/)app
    const first = byTest('mention-option').first();
    await until(async () => (await first.getAttribute('data-label')) === '@src/app.py',
      { timeoutMs: 10_000, message: `the picker does not offer src/app.py first: ${JSON.stringify(await byTest('mention-option').allInnerTexts())}` });
    await shot('mention-picker');
    await page.keyboard.press('Enter');
    await until(async () => JSON.stringify(await byTest('mention-chip').allInnerTexts()) === '["app.py"]'
      && await byTest('mention-chip').first().getAttribute('title') === 'src/app.py',
      { timeoutMs: 3000, message: 'no chip for src/app.py (named app.py, its path as its title)' });
    check((await input.inputValue()) === 'Explain ', `the @query stayed in the input: "${await input.inputValue()}"`);
    for (const query of ['@sel', '@prob']) {
      await page.keyboard.type(query, { delay: 30 });
      await byTest('mention-option').first().waitFor({ timeout: 5000 });
      await page.keyboard.press('Enter');
    }
    await until(async () => (await byTest('mention-chip').count()) === 3, { timeoutMs: 3000, message: 'three chips expected' });
    await chat().locator('[data-testid="mention-chip"][data-label="@selection"] [data-testid="mention-remove"]').click();
    check(JSON.stringify(await byTest('mention-chip').allInnerTexts()) === '["app.py","@problems"]',
      `after removing @selection: ${JSON.stringify(await byTest('mention-chip').allInnerTexts())}`);
    await input.click();
    await page.keyboard.press('End');
    await page.keyboard.type('what does it return?');
    await shot('mention-chips');
    const ends = await count('turn-end');
    await page.keyboard.press('Enter');
    await waitTurnEnd(ends, 'completed');
    check(await byTest('mention-chip').count() === 0, 'the chips stayed after the send');
    const sent = (await requestsSince(mark)).at(-1).body.messages.filter((m) => m.role === 'user').at(-1).content;
    check(sent.startsWith('Explain what does it return?'), `the line sent: ${sent.slice(0, 80)}`);
    // Issue 34 item 11: the model gets the file by its plain path, with its content (given "@src/app.py" it read that)
    check(sent.includes('def main():') && sent.includes('<attachment kind="file" path="src/app.py">') && !sent.includes('@src/app.py'),
      'the model did not get src/app.py by its plain path');
    check(sent.includes('<attachment kind="problems" name="problems">') && !sent.includes('selection'), 'the problems were not sent, or the removed chip was');
    log(`  sent: ${JSON.stringify(sent.slice(0, 240))}`);
    check(JSON.stringify(await byTest('user-message').last().locator('[data-testid="sent-mention"]').allInnerTexts()) === '["app.py","@problems"]',
      'the line does not show what it had attached');
    await script('none');
    await send('::context');
    await until(async () => /attachments: @src\/app\.py \(file, ~\d+ tokens\), @problems \(problems/.test(await byTest('command-output').last().innerText()),
      { timeoutMs: 10_000, message: '::context does not list the attachments' });
    await shot('mentions-sent');
  });

  // Issue 45 item 2: an image pasted into the input is a thumbnail chip (a click previews it, × removes it), a file
  // that is no image is a note, and the sent line carries the image to the model in OpenAI's shape.
  await scenario('image-paste', 120_000, async () => {
    const mark = await script('chat');
    const input = byTest('chat-input');
    await input.click();
    await input.fill('');
    await input.evaluate((el, png) => {  // what Ctrl+V of a screenshot hands the page: a File on the clipboard
      const data = new DataTransfer();
      data.items.add(new File([Uint8Array.from(atob(png), (c) => c.charCodeAt(0))], 'image.png', { type: 'image/png' }));
      el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
    }, SMALL_PNG);
    const chip = chat().locator('[data-testid="image-chip"][data-name="image.png"]');
    await chip.waitFor({ timeout: 10_000 });
    check(await chip.locator('img').evaluate((img) => img.complete && img.naturalWidth > 0), 'the chip shows no thumbnail');
    await input.evaluate((el, png) => {  // dropped from the desktop: a second image and a text file
      const data = new DataTransfer();
      data.items.add(new File([Uint8Array.from(atob(png), (c) => c.charCodeAt(0))], 'shot.png', { type: 'image/png' }));
      data.items.add(new File(['not a picture'], 'notes.txt', { type: 'text/plain' }));
      el.dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true }));
    }, SMALL_PNG);
    await until(async () => (await count('image-chip')) === 2, { timeoutMs: 10_000, message: 'the dropped image made no chip' });
    const note = await byTest('image-note').innerText();
    check(/notes\.txt was not attached: text\/plain is not an image/.test(note), `no note for the text file: "${note}"`);
    await chip.click();
    const preview = byTest('image-preview');
    await preview.waitFor({ timeout: 5000 });
    const shown = await preview.locator('img').evaluate((img) => [img.naturalWidth, img.naturalHeight]);
    check(shown[0] === 96 && shown[1] === 64, `the preview is not the image whole: ${shown}`);
    await shot('image-preview');
    await page.keyboard.press('Escape');
    await until(async () => (await count('image-preview')) === 0, { timeoutMs: 3000, message: 'Escape did not close the preview' });
    await chat().locator('[data-testid="image-chip"][data-name="shot.png"] [data-testid="image-chip-remove"]').click();
    check(JSON.stringify(await byTest('image-chip').evaluateAll((els) => els.map((e) => e.dataset.name))) === '["image.png"]',
      'x did not remove shot.png');
    await input.click();
    await page.keyboard.type('What is in this picture?');
    await shot('image-chip');
    const ends = await count('turn-end');
    await page.keyboard.press('Enter');
    await waitTurnEnd(ends, 'completed');
    check(await count('image-chip') === 0, 'the chip stayed after the send');
    const sentImages = byTest('user-message').last().locator('[data-testid="sent-image"] img');
    check(await sentImages.count() === 1 && await sentImages.first().evaluate((img) => img.naturalWidth > 0),
      'the sent line does not show the thumbnail');
    const content = (await requestsSince(mark)).at(-1).body.messages.filter((m) => m.role === 'user').at(-1).content;
    check(Array.isArray(content), `the line went as text only: ${JSON.stringify(content).slice(0, 200)}`);
    const urls = content.filter((part) => part.type === 'image_url').map((part) => part.image_url.url);
    check(urls.length === 1 && urls[0].startsWith('data:image/png;base64,') && urls[0].length > 200,
      `the request does not carry the image as image_url: ${JSON.stringify(urls).slice(0, 200)}`);
    check(content.some((part) => part.type === 'text' && part.text.includes('What is in this picture?')), 'the text is not sent with it');
    log(`  sent: an image_url of ${urls[0].length} characters beside the text`);
    await shot('image-sent');
    // the light theme and a narrow side bar: the chips and the sent thumbnails fit
    const userSettings = readFileSync(path.join(DATA, 'User', 'settings.json'), 'utf8');
    const wide = (await page.locator('.part.sidebar').first().boundingBox()).width;
    await setTheme('Default Light Modern');
    await dragSidebarTo(280);
    try {
      await input.evaluate((el, png) => {
        const data = new DataTransfer();
        for (const name of ['one.png', 'two.png', 'three.png', 'four.png']) {
          data.items.add(new File([Uint8Array.from(atob(png), (c) => c.charCodeAt(0))], name, { type: 'image/png' }));
        }
        el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
      }, SMALL_PNG);
      await until(async () => (await count('image-chip')) === 4, { timeoutMs: 10_000, message: 'four pasted images, not four chips' });
      const overflow = await chat().locator('main.scroller, footer.composer').evaluateAll((els) =>
        els.filter((el) => el.scrollWidth > el.clientWidth + 1).map((el) => `${el.className}: ${el.scrollWidth} > ${el.clientWidth}`));
      check(overflow.length === 0, `overflows sideways at 280 px: ${overflow.join('; ')}`);
      await clearNotifications(page);
      await shot('image-light-narrow');
    } finally {
      for (let i = await count('image-chip'); i > 0; i--) await byTest('image-chip-remove').first().click().catch(() => undefined);
      await dragSidebarTo(wide).catch((err) => log(`  (sidebar not restored: ${err.message})`));
      writeFileSync(path.join(DATA, 'User', 'settings.json'), userSettings);  // the theme it had
    }
  });

  // Issue 15's effects card: a command that ran in a staging overlay lists what it changed (new.txt, added) with a
  // Show diff in VS Code's diff editor, its exit code and its folded output; Allow puts the file in the workspace.
  await scenario('effects', 90_000, async () => {
    await runCommand(page, 'Sunwell: Set Trust Level');
    await page.locator('.quick-input-list .monaco-list-row').filter({ hasText: 'shell' }).first().click();
    await sleep(1000); // the setting reaches the engine
    await runCommand(page, 'Sunwell: Open Chat');
    await script('effects');
    const ends = await count('turn-end');
    await send('Write hi into new.txt with a command');
    const approval = chat().locator('[data-testid="approval-card"][data-state="pending"]').last();
    await approval.waitFor({ timeout: 30_000 });
    const change = approval.locator('[data-testid="effect-change"][data-path="new.txt"]');
    await change.waitFor({ timeout: 5000 }).catch(async () => {
      throw new Error(`no effects preview (is the overlay sandbox available here?): ${await approval.innerText()}`);
    });
    check((await change.getAttribute('data-change')) === 'added', `new.txt is ${await change.getAttribute('data-change')}`);
    check((await change.locator('[data-testid="effect-badge"]').innerText()) === 'A', 'no A badge');
    check(/exit code 0/.test(await approval.locator('[data-testid="effect-exit-code"]').innerText()), 'no exit code');
    check(!(await approval.locator('[data-testid="effect-output"]').getAttribute('open')), 'the output is not folded');
    check(!existsSync(path.join(WS, 'new.txt')), 'the command reached the workspace before Allow');
    await clearNotifications(page);
    await shot('effects-card');
    await change.locator('[data-testid="effect-show-diff"]').click();
    const diff = page.locator('.monaco-diff-editor').first();
    await diff.waitFor({ timeout: 15_000 });
    await until(async () => nbsp(await diff.innerText()).includes('hi'), { message: 'the diff does not show the new content' });
    check(/new\.txt/.test(await page.locator('.tabs-container .tab.active').innerText()), 'the diff tab is not new.txt');
    await shot('effects-diff');
    await approval.locator('[data-testid="approval-allow"]').click();
    await waitTurnEnd(ends, 'completed');
    check(existsSync(path.join(WS, 'new.txt')) && readFileSync(path.join(WS, 'new.txt'), 'utf8') === 'hi\n', 'Allow did not write new.txt');
    await shot('effects-allowed');
  });

  // (issue 27) web_fetch: a host not in sunwell.network.allow asks, host first, and "Allow host for session" answers
  // it (the name never resolves: the card shows the network error); 127.0.0.1, listed in the user settings, is
  // fetched without a card and its tool card links to the page by its title.
  await scenario('web-fetch', 90_000, async () => {
    await runCommand(page, 'Sunwell: Open Chat');
    await clickViewAction('New Session');
    await byTest('welcome').waitFor({ state: 'visible', timeout: 5000 });
    await script('fetch-ask');
    let ends = await count('turn-end');
    await send('Read http://docs.example.invalid/page');
    const approval = chat().locator('[data-testid="approval-card"][data-state="pending"]').last();
    await approval.waitFor({ timeout: 20_000 });
    check(await approval.getAttribute('data-risk') === 'network', `risk ${await approval.getAttribute('data-risk')}`);
    const host = approval.locator('[data-testid="approval-host"]');
    const url = approval.locator('[data-testid="approval-url"]');
    check(await host.innerText() === 'docs.example.invalid', `host shown: ${await host.innerText()}`);
    check(await url.innerText() === 'http://docs.example.invalid/page', `URL shown: ${await url.innerText()}`);
    check((await host.boundingBox()).y < (await url.boundingBox()).y, 'the host is not above the URL');
    check(await approval.locator('a').count() === 0, 'the URL is a link in the approval card');
    check(/network/.test(await approval.locator('[data-testid="approval-risk"]').innerText()), 'the risk is not named');
    const allowHost = approval.locator('[data-testid="approval-allow-session"]');
    check(await allowHost.innerText() === 'Allow host for session', `the session button says "${await allowHost.innerText()}"`);
    await clearNotifications(page);
    await shot('fetch-approval');
    await allowHost.click();
    await waitTurnEnd(ends, 'completed');
    const failed = chat().locator('[data-testid="tool-card"][data-tool="web_fetch"]').last();
    check(await failed.getAttribute('data-status') === 'error', `the unresolvable fetch ended ${await failed.getAttribute('data-status')}`);
    const error = failed.locator('[data-testid="tool-error"]');
    check(await error.getAttribute('data-code') === 'network', `error ${await error.getAttribute('data-code')}: ${await error.innerText()}`);
    check(/Allowed docs\.example\.invalid for this session/.test(await failed.locator('[data-testid="approval-result"]').innerText()),
      `answered: ${await failed.locator('[data-testid="approval-result"]').innerText()}`);
    log(`  error card: ${nbsp(await error.innerText()).replace(/\s+/g, ' ')}`);
    await shot('fetch-network-error');

    await script('fetch-local');
    ends = await count('turn-end');
    const before = await chat().locator('[data-testid="tool-card"][data-tool="web_fetch"]').count();
    let asked = false;
    await send('Now read the local test page');
    const card = chat().locator('[data-testid="tool-card"][data-tool="web_fetch"]').nth(before);
    await until(async () => {
      asked ||= (await chat().locator('[data-testid="approval-card"][data-state="pending"]').count()) > 0;
      return (await count('turn-end')) > ends;
    }, { timeoutMs: 30_000, every: 50, message: 'the local fetch did not finish' });
    await waitTurnEnd(ends, 'completed');
    check(!asked, 'a host in sunwell.network.allow was asked');
    check(await card.getAttribute('data-status') === 'ok', `the local fetch ended ${await card.getAttribute('data-status')}: ${await card.innerText()}`);
    const link = card.locator('[data-testid="page-link"]');
    check(await link.innerText() === 'Sunwell test page', `the card's link says "${await link.innerText()}"`);
    check(/^http:\/\/127\.0\.0\.1:\d+\/page\.html$/.test(await link.getAttribute('href')), `link to ${await link.getAttribute('href')}`);
    check(await card.locator('[data-testid="page-host"]').innerText() === '127.0.0.1', 'the card does not show the host');
    await shot('fetch-local-page');

    // The link goes to VS Code's opener (its confirmation, or a new browser tab), never into the webview.
    const popup = browser.waitForEvent('page', { timeout: 8000 }).catch(() => null);
    await link.click();
    const dialog = page.locator('.monaco-dialog-box');
    const opened = await Promise.race([
      dialog.waitFor({ state: 'visible', timeout: 8000 }).then(() => 'dialog', () => null),
      popup.then((p) => (p ? p : null)),
    ]);
    check(opened, 'clicking the page link did nothing');
    if (opened === 'dialog') {
      log(`  link: VS Code asks: ${nbsp(await dialog.innerText()).replace(/\s+/g, ' ').slice(0, 200)}`);
      await shot('fetch-link-confirm');
      await dialog.locator('.monaco-button').filter({ hasText: 'Cancel' }).first().click();
    } else {
      await opened.waitForLoadState('domcontentloaded').catch(() => undefined);
      // VS Code trusts localhost links without asking; code-server opens them through its port proxy (/proxy/PORT/)
      const port = new URL(await link.getAttribute('href')).port;
      log(`  link: VS Code opened ${opened.url()} in a new tab`);
      check(opened.url().includes(`127.0.0.1:${port}/`) || opened.url().includes(`/proxy/${port}/`), `the new tab is ${opened.url()}`);
      await opened.close();
      await page.bringToFront(); // the workbench's focus back, else later key gestures (Ctrl+Space) go nowhere
    }
    check(await byTest('chat-input').count() === 1, 'the chat webview navigated away');
  });

  // (issue 28) learn_api: the card lists the tools and the host, offers no allow-for-session; after Allow, a later
  // turn calls a learned GET without asking; Sunwell: Learned APIs lists it and Forget forgets it.
  await scenario('learned-apis', 120_000, async () => {
    await runCommand(page, 'Sunwell: Open Chat');
    await clickViewAction('New Session');
    await byTest('welcome').waitFor({ state: 'visible', timeout: 5000 });
    // Issue 46 item 7: with none learned yet, the picker offers to learn one, and that puts the line into the chat.
    await runCommand(page, 'Sunwell: Learned APIs');
    const learn = page.locator('.quick-input-list .monaco-list-row').filter({ hasText: 'Learn an API' }).first();
    check(await learn.waitFor({ timeout: 10_000 }).then(() => true, () => false), 'the empty Learned APIs picker offers no way to learn one');
    await learn.click();
    await page.locator('.quick-input-widget input.input').first().fill('https://pokeapi.co/openapi.yml');
    await page.keyboard.press('Enter');
    await until(async () => (await byTest('chat-input').inputValue()) === 'Learn the API described by https://pokeapi.co/openapi.yml',
      { timeoutMs: 10_000, message: 'the learn line did not reach the chat input' });
    await byTest('chat-input').fill('');
    await script('learn-api');
    let ends = await count('turn-end');
    await send('Learn the PokeAPI');
    const approval = chat().locator('[data-testid="approval-card"][data-state="pending"]').last();
    await approval.waitFor({ timeout: 20_000 });
    const operations = await approval.locator('[data-testid="approval-operations"]').innerText();
    check(/pokeapi__pokemon_retrieve/.test(operations) && /GET \/pokemon\/\{id\}\//.test(operations), `operations shown: ${operations}`);
    check(/127\.0\.0\.1/.test(await approval.locator('[data-testid="approval-hosts"]').innerText()), 'the host is not shown');
    check(await approval.locator('[data-testid="approval-allow-session"]').count() === 0, 'learning offers allow-for-session');
    await shot('learn-approval');
    await approval.locator('[data-testid="approval-allow"]').click();
    await waitTurnEnd(ends, 'completed');

    await script('learned-call');
    ends = await count('turn-end');
    let asked = false;
    await send('What type is pikachu?');
    await until(async () => {
      asked ||= (await chat().locator('[data-testid="approval-card"][data-state="pending"]').count()) > 0;
      return (await count('turn-end')) > ends;
    }, { timeoutMs: 30_000, every: 50, message: 'the learned call did not finish' });
    await waitTurnEnd(ends, 'completed');
    check(!asked, 'a learned GET was asked');
    const card = chat().locator('[data-testid="tool-card"][data-tool="pokeapi__pokemon_retrieve"]').last();
    check(await card.getAttribute('data-status') === 'ok', `the learned call ended ${await card.getAttribute('data-status')}`);
    await shot('learned-call');

    await runCommand(page, 'Sunwell: Learned APIs');
    const row = page.locator('.quick-input-list .monaco-list-row').filter({ hasText: 'pokeapi' }).first();
    await row.waitFor({ timeout: 10_000 });
    check(/3 tools/.test(await row.innerText()), `the picker shows: ${await row.innerText()}`);
    await shot('learned-apis-picker');
    await row.click();
    const forget = page.locator('.quick-input-list .monaco-list-row').filter({ hasText: 'Forget' }).first();
    await forget.waitFor({ timeout: 10_000 });
    await forget.click();
    const dialog = page.locator('.monaco-dialog-box');
    await dialog.waitFor({ state: 'visible', timeout: 10_000 });
    await dialog.locator('.monaco-button').filter({ hasText: 'Forget' }).first().click();
    await until(async () => (await page.locator('.notifications-toasts').innerText().catch(() => '')).includes('forgot pokeapi'),
      { timeoutMs: 10_000, message: 'no "forgot pokeapi" notification' });
    await runCommand(page, 'Sunwell: Learned APIs');
    const placeholder = () => page.locator('.quick-input-widget input.input').first().getAttribute('placeholder').catch(() => '');
    await until(async () => /No learned APIs/.test(await placeholder() ?? ''),
      { timeoutMs: 10_000, message: 'the picker still lists an API after Forget' });
    check(await page.locator('.quick-input-list .monaco-list-row').filter({ hasText: 'pokeapi' }).count() === 0,
      'pokeapi is still listed after Forget');
    await page.keyboard.press('Escape');
    await clearNotifications(page);
  });

  await polishScenarios();
  // (g) a lens file: a diagnostic on the misspelt key, and completion of a trust level
  await agentToolScenarios();
  await backgroundScenarios();

  await scenario('lens', 60_000, async () => {
    await openFile(page, 'review.lens');
    const editor = page.locator('.editor-instance .monaco-editor').first();
    const squiggle = editor.locator('.squiggly-error, .squiggly-warning').first();
    await squiggle.waitFor({ timeout: 30_000 });
    // The code lens above the first line shifts the text when it appears: wait for it, then hover where the
    // squiggle is now, again if it moved under the mouse.
    const codeLens = editor.locator('.codelens-decoration').filter({ hasText: 'Use this lens' }).first();
    await codeLens.waitFor({ timeout: 10_000 }).catch(() => log('  note: no "Use this lens" code lens within 10s'));
    const hover = page.locator('.monaco-hover:not(.hidden)').filter({ hasText: 'instructionz' }).first();
    await until(async () => {
      const box = await squiggle.boundingBox();
      if (!box) return false;
      await page.mouse.move(5, 400);
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      return hover.waitFor({ timeout: 3_000 }).then(() => true, () => false);
    }, { timeoutMs: 20_000, every: 100, message: 'no hover explains the diagnostic' });
    const hoverText = await hover.innerText();
    check(/unknown key/i.test(hoverText), `the hover does not explain the problem: ${hoverText}`);
    log(`  diagnostic: ${hoverText.split('\n')[0]}`);
    log(`  code lenses: ${(await editor.locator('.codelens-decoration').allInnerTexts()).join(' | ') || '(none)'}`);
    await shot('lens-diagnostic');
    await page.mouse.move(5, 400);
    // Replace the trust level's value through completion.
    await editor.click();
    await quickInput(page, ':6');
    await page.keyboard.press('Enter');
    await page.keyboard.press('End');
    for (let i = 0; i < 'read_only'.length; i++) await page.keyboard.press('Backspace');
    const suggest = page.locator('.suggest-widget.visible');
    // Asked again when it did not open: on a loaded machine the first Ctrl+Space can come before the editor has the
    // lens language's completion provider.
    for (let attempt = 1; ; attempt++) {
      await page.keyboard.press('Control+Space');
      if (await suggest.waitFor({ timeout: 8000 }).then(() => true, () => false)) break;
      check(attempt < 3, 'Ctrl+Space opened no completion list, three times');
      await page.keyboard.press('Escape');
    }
    const labels = await suggest.locator('.monaco-list-row .label-name').allInnerTexts();
    for (const level of ['discovery', 'read_only', 'workspace', 'shell', 'full']) {
      check(labels.some((l) => l.includes(level)), `no completion for ${level}: ${labels.join(', ')}`);
    }
    await shot('lens-completion');
    await page.keyboard.type('works');
    await page.keyboard.press('Enter');
    await until(async () => (await editor.locator('.view-line').allInnerTexts()).some((l) => /trust_level:\s+workspace\s*$/.test(nbsp(l))),
      { timeoutMs: 5000, message: 'the completion was not inserted' });
    await shot('lens-completed');
    // The same diagnostic in the Problems panel (and nothing else once the file is valid but for the key).
    await page.keyboard.press('Escape');
    await runCommand(page, 'Problems: Focus on Problems View');
    const rows = page.locator('.markers-panel .monaco-list-row');
    await until(async () => (await rows.allInnerTexts()).some((t) => t.includes('instructionz')),
      { timeoutMs: 10_000, message: 'the Problems panel does not list the unknown key' });
    await sleep(1500); // diagnostics of the edit settle
    log(`  problems: ${(await rows.allInnerTexts()).map((t) => nbsp(t).replace(/\s+/g, ' ')).join(' | ')}`);
    await shot('problems-panel');
  });
}

/** Issue 34: what a first hour in the chat found. */
async function polishScenarios() {
  // Bug 2: Stop while an approval waits: the card says Stopped, not "No answer in time: denied".
  await scenario('stop-approval', 60_000, async () => {
    await runCommand(page, 'Sunwell: Open Chat');
    await script('write-deny');
    const ends = await count('turn-end');
    await send('Make main return 0');
    const approval = chat().locator('[data-testid="approval-card"][data-state="pending"]').last();
    await approval.waitFor({ timeout: 20_000 });
    await byTest('stop-button').click();
    await waitTurnEnd(ends, 'cancelled', 10_000);
    const card = chat().locator('[data-testid="tool-card"][data-tool="write_file"]').last().locator('[data-testid="approval-card"]');
    const text = await card.innerText();
    check(await card.getAttribute('data-state') === 'stopped' && /Stopped/.test(text) && !/No answer in time/.test(text),
      `the stopped approval says ${JSON.stringify(text)} (${await card.getAttribute('data-state')})`);
    check(readFileSync(path.join(WS, 'src', 'app.py'), 'utf8') === APP_PY, 'the stopped write reached src/app.py');
    await shot('stop-approval');
  });

  // Item 7: a turn's info notices fold into one quiet line that opens; the meter agrees with ::context (bug 3).
  await scenario('notes-meter', 60_000, async () => {
    await script('read-repeated');
    const ends = await count('turn-end');
    await send('What does a.txt say? Check twice.');
    await waitTurnEnd(ends, 'completed');
    const turnNotes = chat().locator('[data-testid="notes"]').last();
    await turnNotes.waitFor({ timeout: 5000 });
    check(await chat().locator('.transcript > [data-testid="notice"][data-code="repeated_call"]').count() === 0,
      'an info notice stands on its own line');
    check(!(await turnNotes.locator('li').first().isVisible()), 'the notes are open before they are asked for');
    await turnNotes.locator('summary').click();
    await until(async () => (await turnNotes.locator('[data-testid="notice"][data-code="repeated_call"]').isVisible()),
      { timeoutMs: 3000, message: 'the notes did not open to the repeated call' });
    await shot('notes-open');
    const meter = nbsp(await byTest('context-meter').innerText());
    await script('none');
    await send('::context');
    const output = byTest('command-output').last();
    await until(async () => /% full/.test(await output.innerText()), { timeoutMs: 10_000, message: '::context did not answer' });
    const full = Number(/(\d+)% full/.exec(await output.innerText())[1]);
    const shown = Number(/(\d+)%/.exec(meter)?.[1] ?? NaN);
    log(`  meter "${meter}", ::context ${full}% full`);
    check(Math.abs(shown - full) <= 2, `the meter shows ${shown}%, ::context says ${full}%`);
  });

  // Item 9: scrolled up during a stream, a Jump to latest button; it takes the user down.
  await scenario('jump-latest', 60_000, async () => {
    await script('slow');
    const ends = await count('turn-end');
    const answers = await count('assistant-message');
    await send('Count slowly for me');
    const answer = byTest('assistant-message').nth(answers);
    await until(async () => (await answer.count()) > 0 && (await answer.innerText()).length > 400,
      { timeoutMs: 20_000, message: 'the slow answer did not grow' });
    const scroller = chat().locator('main.scroller');
    await scroller.evaluate((el) => { el.scrollTop = 0; });
    await byTest('jump-latest').waitFor({ state: 'visible', timeout: 3000 });
    await sleep(1000);
    check(await scroller.evaluate((el) => el.scrollTop) < 50, 'the stream pulled the scrolled-up user down');
    await shot('jump-latest');
    await byTest('jump-latest').click();
    await until(async () => scroller.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight < 40),
      { timeoutMs: 3000, message: 'Jump to latest did not reach the bottom' });
    check(!(await byTest('jump-latest').isVisible()), 'the button stayed at the bottom');
    await byTest('stop-button').click();
    await waitTurnEnd(ends, 'cancelled', 10_000);
  });

  // Bug 4: Tab to the model chip, Enter, Escape: the focus comes back to the chat, and Shift+Tab reaches the input.
  await scenario('picker-focus', 45_000, async () => {
    await script('none');
    const inChat = (id) => chat().locator(`[data-testid="${id}"]`).evaluate((el) => el === document.activeElement && document.hasFocus());
    await byTest('chat-input').click();
    await page.keyboard.press('Tab');
    for (let i = 0; i < 6 && !(await inChat('pick-model')); i++) await page.keyboard.press('Tab');
    check(await inChat('pick-model'), 'Tab does not reach the model chip');
    await page.keyboard.press('Enter');
    await page.locator('.quick-input-widget').waitFor({ state: 'visible', timeout: 10_000 });
    await page.keyboard.press('Escape');
    await page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: 10_000 });
    await until(() => inChat('pick-model'), { timeoutMs: 5000, message: 'the focus did not come back to the model chip' });
    for (let i = 0; i < 6 && !(await inChat('chat-input')); i++) await page.keyboard.press('Shift+Tab');
    check(await inChat('chat-input'), 'Shift+Tab does not reach the input');
    await page.keyboard.type('typed after the picker');
    check((await byTest('chat-input').inputValue()).endsWith('typed after the picker'), 'typing did not reach the input');
    await byTest('chat-input').fill('');
    await shot('picker-focus');
  });

  // Item 12: MCP Servers with none configured says how to add one and opens the user config at mcp_servers.
  await scenario('mcp-empty', 45_000, async () => {
    await clearNotifications(page);
    await runCommand(page, 'Sunwell: MCP Servers');
    const toast = page.locator('.notifications-toasts .notification-toast').filter({ hasText: 'no MCP servers are configured' }).first();
    await toast.waitFor({ timeout: 10_000 });
    check(!(await page.locator('.quick-input-widget').isVisible()), 'an empty picker opened');
    await shot('mcp-empty');
    await toast.locator('.monaco-button').filter({ hasText: 'Open User Config' }).click();
    const tab = page.locator('.tabs-container .tab.active');
    await until(async () => /config\.yaml/.test(await tab.innerText()), { timeoutMs: 10_000, message: 'the user config did not open' });
    const config = path.join(HOME, '.config', 'sunwell', 'config.yaml');
    check(/^mcp_servers:/m.test(readFileSync(config, 'utf8')), `no mcp_servers key in ${config}`);
    const line = page.locator('.editor-instance .monaco-editor .current-line').first();
    await line.waitFor({ timeout: 5000 });
    const lines = await page.locator('.editor-instance .monaco-editor .view-line').allInnerTexts();
    check(lines.some((l) => nbsp(l).startsWith('mcp_servers:')), `the editor shows ${JSON.stringify(lines.slice(0, 4))}`);
    await shot('mcp-empty-config');
    await runCommand(page, 'View: Close All Editors');
    await clearNotifications(page);
  });

  // Issue 31: an MCP server's prompt as a `::SERVER:PROMPT` command (completed as it is typed), its resource as an
  // `@SERVER:URI` mention; both reach the model. The server (tests/mcp_servers/offerings.py) is in the user config.
  await scenario('mcp-prompt-resource', 120_000, async () => {
    const python = sidecars()[0]?.python;
    check(python, 'no engine runs to take its interpreter from');
    const config = path.join(HOME, '.config', 'sunwell', 'config.yaml');
    const before = existsSync(config) ? readFileSync(config, 'utf8') : null;
    const server = { command: python, args: [path.join(root, 'tests', 'mcp_servers', 'offerings.py'), 'notes'], sandbox: 'off',
      trust: 'workspace' };  // offered at the chat's trust level, so the turn starts it
    mkdirSync(path.dirname(config), { recursive: true });
    writeFileSync(config, JSON.stringify({ mcp_servers: { notes: server } }));  // JSON is YAML
    const ready = async () => !(await byTest('sidecar-banner').isVisible());
    try {
      await runCommand(page, 'Sunwell: Restart Sidecar');
      await until(ready, { timeoutMs: 45_000, message: 'the engine did not come back' });
      await runCommand(page, 'Sunwell: Open Chat');
      await script('chat');
      const first = await count('turn-end');
      await send('Hello with an MCP server');  // the turn starts the server: its prompts and resources are known
      await waitTurnEnd(first, 'completed');
      const input = byTest('chat-input');
      await input.click();
      await input.fill('');
      await page.keyboard.type('::notes:', { delay: 40 });
      await until(async () => (await byTest('command-completions').innerText()).includes('notes:review'),
        { timeoutMs: 15_000, message: 'the prompt is not completed as a command' });
      await shot('mcp-prompt-completion');
      await page.keyboard.type('review path=src/app.py focus="style issues"', { delay: 10 });
      let mark = await script('chat');
      let ends = await count('turn-end');
      await page.keyboard.press('Enter');
      await waitTurnEnd(ends, 'completed');
      let users = (await requestsSince(mark)).at(-1).body.messages.filter((m) => m.role === 'user').map((m) => JSON.stringify(m.content));
      check(users.some((c) => c.includes('Review src/app.py and report style issues')), `the prompt's message was not sent: ${users.join(' | ').slice(0, 300)}`);

      mark = await script('chat');
      await input.click();
      await input.fill('');
      await page.keyboard.type('What do the notes say? @notes:', { delay: 30 });
      const option = byTest('mention-option').filter({ hasText: 'notes://team/readme' }).first();
      await option.waitFor({ timeout: 10_000 });
      await shot('mcp-resource-picker');
      await option.click();
      await until(async () => (await byTest('mention-chip').count()) === 1, { timeoutMs: 3000, message: 'no chip for the resource' });
      await input.click();
      await page.keyboard.press('End');
      ends = await count('turn-end');
      await page.keyboard.press('Enter');
      await waitTurnEnd(ends, 'completed');
      users = (await requestsSince(mark)).at(-1).body.messages.filter((m) => m.role === 'user').map((m) => JSON.stringify(m.content));
      check(users.at(-1).includes('Deploys happen on Tuesdays.'), `the resource did not reach the model: ${users.at(-1)?.slice(0, 300)}`);
      await shot('mcp-resource-sent');
    } finally {
      if (before === null) rmSync(config, { force: true });
      else writeFileSync(config, before);
      await runCommand(page, 'Sunwell: Restart Sidecar').catch(() => undefined);
      await until(ready, { timeoutMs: 45_000 }).catch(() => log('  (the engine did not come back after the MCP server was removed)'));
    }
  });

  // Item 13: the plan checklist, the question card and the sub-agent card in the light theme and a narrow panel:
  // nothing overflows sideways, the question is answered with the keyboard alone.
  await scenario('cards-light-narrow', 120_000, async () => {
    const userSettings = readFileSync(path.join(DATA, 'User', 'settings.json'), 'utf8');
    await setTheme('Default Light Modern');
    const sidebar = page.locator('.part.sidebar').first();
    const wide = (await sidebar.boundingBox()).width;
    await dragSidebarTo(280);
    try {
      await runCommand(page, 'Sunwell: Open Chat');
      await script('plan-question');
      const ends = await count('turn-end');
      await send('Set up the storage for the service');
      const card = chat().locator('[data-testid="question-card"][data-state="pending"]').last();
      await card.waitFor({ timeout: 20_000 });
      const plan = byTest('plan');
      check(await plan.isVisible() && /1\/3/.test(await byTest('plan-count').innerText()), 'the plan is not pinned with 1/3');
      const overflow = () => chat().locator('main.scroller, footer.composer').evaluateAll((els) =>
        els.filter((el) => el.scrollWidth > el.clientWidth + 1).map((el) => `${el.className}: ${el.scrollWidth} > ${el.clientWidth}`));
      check((await overflow()).length === 0, `overflows sideways at 280 px: ${(await overflow()).join('; ')}`);
      await until(async () => card.locator('[data-testid="question-input"]').evaluate((el) => el === document.activeElement),
        { timeoutMs: 5000, message: 'the question field did not take the keyboard' });
      await clearNotifications(page);
      await shot('light-narrow-plan-question');
      if (await page.locator('.quick-input-widget').isVisible()) await page.keyboard.press('Escape');
      await card.locator('[data-testid="question-input"]').click();  // the keyboard in the chat, on the field
      for (let i = 0; i < 6; i++) {  // back from the field to the options, by keyboard
        await page.keyboard.press('Shift+Tab');
        if (await card.locator('[data-testid="question-option"]').filter({ hasText: 'SQLite' })
          .evaluate((el) => el === document.activeElement).catch(() => false)) break;
      }
      await page.keyboard.press('Enter');
      await waitTurnEnd(ends, 'completed');
      const answered = chat().locator('[data-testid="question-card"]').last();
      check((await answered.innerText()).includes('SQLite'), `the keyboard's answer: ${await answered.innerText()}`);
      await script('subagent');
      const again = await count('turn-end');
      await send('Where is main defined?');
      await waitTurnEnd(again, 'completed');
      await chat().locator('[data-testid="tool-card"][data-tool="task"]').last().locator('[data-testid="tool-head"]').first().click();
      check((await overflow()).length === 0, `the sub-agent card overflows at 280 px: ${(await overflow()).join('; ')}`);
      await shot('light-narrow-subagent');
    } finally {  // as it was, without hiding what failed above
      await dragSidebarTo(wide).catch((err) => log(`  (sidebar not restored: ${err.message})`));
      await setTheme('Default Dark Modern').catch((err) => log(`  (${err.message})`));
      writeFileSync(path.join(DATA, 'User', 'settings.json'), userSettings);
    }
  });
}

/** `workbench.colorTheme` in the user's settings.json, as a user edits it; resolves once the workbench shows it. */
async function setTheme(name) {
  const file = path.join(DATA, 'User', 'settings.json');
  writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), 'workbench.colorTheme': name }, null, 2));
  const light = /light/i.test(name);
  await until(async () => page.locator(`.monaco-workbench.${light ? 'vs' : 'vs-dark'}`).count(),
    { timeoutMs: 15_000, message: `the workbench did not switch to ${name}` });
}

/** Drags the side bar's edge until the bar is `width` pixels wide, as a user does. */
async function dragSidebarTo(width) {
  const box = await page.locator('.part.sidebar').first().boundingBox();
  const x = box.x + box.width;
  const y = box.y + box.height / 2;
  await page.mouse.move(x - 1, y);
  await page.mouse.down();
  await page.mouse.move(box.x + width, y, { steps: 8 });
  await page.mouse.up();
  await sleep(500);
}

/** Registered after the other scenarios by `main`: ask_user's question card, task's sub-agent card, code intelligence. */
async function agentToolScenarios() {
  await scenario('question-card', 60_000, async () => {
    const mark = await script('question');
    const ends = await count('turn-end');
    await send('Set up the storage for the service');
    const card = chat().locator('[data-testid="question-card"][data-state="pending"]').last();
    await card.waitFor({ timeout: 20_000 });
    const options = await card.locator('[data-testid="question-option"]').allInnerTexts();
    check(options.join('|') === 'PostgreSQL|SQLite', `options ${JSON.stringify(options)}`);
    check((await card.innerText()).includes('Which database should the service use?'), 'the card does not show the question');
    const field = card.locator('[data-testid="question-input"]');
    await until(async () => field.evaluate((el) => el === document.activeElement), { timeoutMs: 5000, message: 'the question field did not take the keyboard' });
    await clearNotifications(page);
    await shot('question-card');
    await page.keyboard.type('SQLite, it is a prototype');
    await page.keyboard.press('Enter');
    await waitTurnEnd(ends, 'completed');
    const answered = chat().locator('[data-testid="question-card"]').last();
    check(await answered.getAttribute('data-state') === 'answered', `card state ${await answered.getAttribute('data-state')}`);
    check((await answered.innerText()).includes('SQLite, it is a prototype'), `answered card: ${await answered.innerText()}`);
    const sent = JSON.stringify(await requestsSince(mark));
    check(sent.includes('SQLite, it is a prototype'), 'the answer did not reach the model');
    check((await byTest('assistant-message').last().innerText()).includes('SQLite, it is a prototype'), 'no final answer');
    await shot('question-answered');
  });

  await scenario('subagent-card', 60_000, async () => {
    await script('subagent');
    const ends = await count('turn-end');
    await send('Where is main defined?');
    const card = chat().locator('[data-testid="tool-card"][data-tool="task"]').last();
    await card.waitFor({ timeout: 20_000 });
    const nested = card.locator('[data-testid="subagent"] [data-testid="tool-card"]');
    await until(async () => (await nested.count()) >= 1, { timeoutMs: 20_000, message: 'no nested tool card while the sub-agent ran' });
    await shot('subagent-running');
    await waitTurnEnd(ends, 'completed');
    check(await card.getAttribute('data-status') === 'ok', `task card ${await card.getAttribute('data-status')}`);
    const inside = await card.locator('[data-testid="tool-card"][data-tool="read_file"]').count();
    check(inside === 1, `read_file inside the task card: ${inside}`);
    check(!(await card.locator('[data-testid="subagent"]').isVisible()), 'the finished sub-agent did not fold');
    // Issue 46 item 7: at the sidebar's default width the title is whole (wrapped, not cut) and the calls are counted
    // where they are seen, not only in a tooltip.
    const title = card.locator(':scope > [data-testid="subagent-title"]');
    check(await title.isVisible(), 'no sub-agent title under the head');
    const whole = await title.evaluate((el) => el.scrollWidth <= el.clientWidth && !/…$/.test(el.textContent ?? ''));
    check(whole, `the sub-agent's title is cut: "${await title.innerText()}"`);
    check((await card.locator(':scope > [data-testid="tool-head"] [data-testid="subagent-calls"]').innerText()) === '2 calls',
      'the call count is not shown on the card');
    await card.locator('[data-testid="tool-head"]').first().click();
    const subagent = card.locator('[data-testid="subagent"]');
    await subagent.waitFor({ state: 'visible', timeout: 5000 });
    const tools = await subagent.locator(':scope > [data-testid="tool-card"]').evaluateAll((els) => els.map((e) => `${e.dataset.tool}:${e.dataset.status}`));
    check(tools.join(',') === 'search_files:ok,read_file:ok', `nested cards ${tools.join(',')}`);
    const output = await card.locator(':scope > .tool-body [data-testid="subagent-answer"]').innerText();
    check(output.includes('src/app.py, line 1'), `task output ${output}`);
    await shot('subagent-card');
  });

  await scenario('subagent-stop', 60_000, async () => {
    await script('subagent-stop');
    const ends = await count('turn-end');
    await send('Survey the workspace slowly');
    const card = chat().locator('[data-testid="tool-card"][data-tool="task"]').last();
    const listed = card.locator('[data-testid="subagent"] [data-testid="tool-card"][data-tool="list_files"][data-status="ok"]');
    await listed.waitFor({ timeout: 20_000 });
    await sleep(1000); // the sub-agent is streaming its slow answer now
    await byTest('stop-button').click();
    await waitTurnEnd(ends, 'cancelled', 10_000);
    check(await card.getAttribute('data-status') === 'error', `task card ${await card.getAttribute('data-status')}`);
    check(await card.locator(':scope > [data-testid="tool-error"]').getAttribute('data-code') === 'interrupted', 'the task was not interrupted');
    check(await byTest('send-button').isVisible(), 'the send button did not come back');
    await card.locator('[data-testid="tool-head"]').first().click();
    await card.locator('[data-testid="subagent"]').waitFor({ state: 'visible', timeout: 5000 });
    await shot('subagent-stopped');
  });

  // Issue 34 items 8 and 10: Edit & resend (the pencil reached with the keyboard) replaces the last exchange, and
  // Retry regenerates a completed answer in its place: the model sees neither the old line nor the old answer, and
  // the session reopened from the picker replays the branch chosen.
  await scenario('edit-resend', 90_000, async () => {
    await runCommand(page, 'Sunwell: Open Chat');
    await clickViewAction('New Session');
    await byTest('welcome').waitFor({ state: 'visible', timeout: 5000 });
    const mark = await script('edit-resend');
    const original = 'Edit & resend: what does a.txt say?';
    const edited = 'Edit & resend: what does README.md say?';
    const shown = async () => JSON.stringify({ users: await byTest('user-message').allInnerTexts(),
      answers: await byTest('assistant-message').allInnerTexts(),
      ends: await chat().locator('[data-testid="turn-end"]').evaluateAll((els) => els.map((e) => e.dataset.status)) });
    await send(original);
    await waitTurnEnd(0, 'completed');

    // The pencil: Shift+Tab from the input reaches it (past the answer's Retry), and it shows without the mouse.
    const input = byTest('chat-input');
    await input.click();
    await page.mouse.move(5, 400); // no hover over the message: only the keyboard focus may show the pencil
    const pencil = byTest('user-message').last().locator('[data-testid="edit-message"]');
    const focused = (locator) => locator.evaluate((el) => el === el.ownerDocument.activeElement);
    let presses = 0;
    while (!(await focused(pencil)) && presses < 12) {
      await page.keyboard.press('Shift+Tab');
      presses += 1;
    }
    check(await focused(pencil), `Shift+Tab from the input did not reach the pencil (${presses} presses)`);
    await until(async () => (await pencil.evaluate((el) => getComputedStyle(el).opacity)) === '1',
      { timeoutMs: 3000, message: 'the pencil does not show when it has the keyboard focus' });
    check(await pencil.isVisible(), 'the focused pencil is not visible');
    await shot('edit-pencil-focused');

    // Enter on it: the line back in the input, an "Editing" banner; Escape cancels and leaves the exchange as it was.
    await page.keyboard.press('Enter');
    const banner = byTest('edit-banner');
    await banner.waitFor({ state: 'visible', timeout: 5000 });
    check((await banner.innerText()).includes('Editing your last message'), `the banner says "${await banner.innerText()}"`);
    check((await input.inputValue()) === original, `the input holds "${await input.inputValue()}"`);
    check(await focused(input), 'the input did not take the keyboard');
    await page.keyboard.press('Escape');
    await banner.waitFor({ state: 'hidden', timeout: 5000 });
    check((await input.inputValue()) === '', `Escape left "${await input.inputValue()}" in the input`);
    check(await count('user-message') === 1 && await count('turn-end') === 1, `Escape changed the transcript: ${await shown()}`);

    // Edited and sent: only the new exchange shows, and the model got only the edited line.
    await pencil.click();
    await banner.waitFor({ state: 'visible', timeout: 5000 });
    await input.fill(edited);
    await shot('edit-banner');
    await page.keyboard.press('Enter');
    const only = (answer) => async () => {
      const now = JSON.parse(await shown());
      return now.users.length === 1 && now.users[0] === edited && now.answers.length === 1 && now.answers[0].includes(answer)
        && now.ends.join() === 'completed';
    };
    await until(only('Second answer'), { timeoutMs: 30_000, message: 'the edited line did not replace the exchange' })
      .catch(async (err) => { throw new Error(`${err.message}: ${await shown()}`); });
    check(await banner.isHidden(), 'the banner stayed after the send');
    let requests = await requestsSince(mark);
    check(requests.length === 2, `expected 2 model requests, got ${requests.length}`);
    const lines = (request) => request.body.messages.filter((m) => m.role !== 'system').map((m) => m.content);
    check(JSON.stringify(lines(requests[1])) === JSON.stringify([edited]),
      `the edited request carried ${JSON.stringify(lines(requests[1])).slice(0, 300)}`);
    check(!JSON.stringify(requests[1].body).includes('First answer'), 'the model saw the answer the edit replaced');
    await shot('edit-resent');

    // Retry on the completed answer: asked again in its place; the model does not see the answer it replaces.
    const retry = byTest('turn-end').last().locator('[data-testid="retry-button"]');
    await retry.waitFor({ timeout: 5000 });
    await retry.click();
    await until(only('Third answer'), { timeoutMs: 30_000, message: 'Retry did not replace the answer' })
      .catch(async (err) => { throw new Error(`${err.message}: ${await shown()}`); });
    requests = await requestsSince(mark);
    check(requests.length === 3, `expected 3 model requests, got ${requests.length}`);
    check(JSON.stringify(lines(requests[2])) === JSON.stringify([edited]),
      `Retry's request carried ${JSON.stringify(lines(requests[2])).slice(0, 300)}`);
    check(!JSON.stringify(requests[2].body).includes('Second answer'), 'the model saw the answer Retry replaced');
    await shot('retried-answer');

    // Reopened from the picker (from another session): the replay is the branch chosen.
    await clickViewAction('New Session');
    await byTest('welcome').waitFor({ state: 'visible', timeout: 5000 });
    await openSessionFromPicker('Edit & resend: what does');
    await until(only('Third answer'), { timeoutMs: 15_000, message: 'the reopened session does not replay the branch chosen' })
      .catch(async (err) => { throw new Error(`${err.message}: ${await shown()}`); });
    await shot('edit-resend-replayed');
  });

  await scenario('code-intel', 120_000, async () => {
    await openFile(page, 'broken.ts');
    const editor = page.locator('.editor-instance .monaco-editor').first();
    await editor.locator('.squiggly-error').first().waitFor({ timeout: 60_000 });
    await shot('code-intel-editor');
    await runCommand(page, 'Sunwell: Open Chat');
    await script('code-intel');
    const ends = await count('turn-end');
    await send('Check the TypeScript and find greet');
    await waitTurnEnd(ends, 'completed', 60_000);
    const outputs = {};
    for (const tool of ['diagnostics', 'find_symbol', 'find_references']) {
      const card = chat().locator(`[data-testid="tool-card"][data-tool="${tool}"]`).last();
      check(await card.getAttribute('data-status') === 'ok', `${tool}: ${await card.getAttribute('data-status')} ${await card.innerText()}`);
      await card.locator('[data-testid="tool-head"]').click();
      outputs[tool] = await card.locator('[data-testid="tool-output"]').innerText();
      log(`  ${tool}: ${outputs[tool].split('\n').slice(0, 3).join(' / ')}`);
    }
    check(/src\/broken\.ts:3:\d+: error: Type 'string' is not assignable to type 'number'/.test(outputs.diagnostics), `diagnostics: ${outputs.diagnostics}`);
    check(/src\/greet\.ts:1:\d+: greet(\(\))? \(Function\)/.test(outputs.find_symbol), `find_symbol: ${outputs.find_symbol}`);
    check(outputs.find_references.includes('src/greet.ts:1:') && outputs.find_references.includes('src/broken.ts:3:'), `find_references: ${outputs.find_references}`);
    check(!outputs.diagnostics.includes(WS), 'an absolute path reached the model');
    await shot('code-intel');
  });

  // Issue 30: the engine killed during a turn (SIGKILL while the model request after a tool call waits): the
  // extension restarts it, the turn shows Resume, and Resume completes it (only the held request goes again; the
  // read_file it finished does not run twice).
  await scenario('kill-resume', 150_000, async () => {
    const ready = async () => !(await byTest('sidecar-banner').isVisible());
    await until(ready, { timeoutMs: 45_000, message: 'the engine was not ready to start with' });
    // a session of its own, with no turn of another scenario still running anywhere: Resume is this turn's
    await runCommand(page, 'Sunwell: Open Chat');
    await clickViewAction('New Session');
    await until(async () => (await count('user-message')) === 0 && (await byTest('send-button').isVisible()),
      { timeoutMs: 15_000, message: 'no new, idle session to start from' });
    const mark = await script('kill-resume');
    const ends = await count('turn-end');
    const cards = await chat().locator('[data-testid="tool-card"][data-tool="read_file"]').count();
    await send('Read a.txt and tell me what it says');
    // the second model request (with the read_file result) is recorded and held: the turn is mid-way
    await until(async () => (await requestsSince(mark)).length >= 2,
      { timeoutMs: 30_000, message: 'the turn did not reach its second model request' });
    check((await chat().locator('[data-testid="tool-card"][data-tool="read_file"]').count()) > cards, 'no read_file card before the kill');
    const before = sidecars();
    check(before.length === 1, `expected one sidecar, found ${JSON.stringify(before)}`);
    log(`  killing sidecar ${before[0].pid} mid-turn`);
    process.kill(before[0].pid, 'SIGKILL');
    await until(async () => {
      const now = sidecars();
      return now.length === 1 && now[0].pid !== before[0].pid && (await ready()) ? now : false;
    }, { timeoutMs: 60_000, message: 'the extension did not restart the engine' });
    log(`  restarted sidecar ${sidecars()[0].pid}`);
    const resume = byTest('resume-button');
    await until(async () => (await count('turn-end')) > ends
      && (await byTest('turn-end').last().getAttribute('data-status')) === 'interrupted' && (await resume.isVisible()),
    { timeoutMs: 30_000, message: 'the interrupted turn does not show Resume' })
      .catch(async (err) => {
        throw new Error(`${err.message}; last turn end: "${await byTest('turn-end').last().innerText().catch(() => '(none)')}" `
          + `(${await byTest('turn-end').last().getAttribute('data-status').catch(() => '?')})`);
      });
    await shot('kill-interrupted');
    await clearNotifications(page);
    const held = (await requestsSince(mark)).length;
    await resume.click();
    await until(async () => (await byTest('turn-end').last().getAttribute('data-status')) === 'completed',
      { timeoutMs: 30_000, message: 'the resumed turn did not complete' });
    const answer = await byTest('assistant-message').last().innerText();
    check(answer.includes('Resumed after the restart'), `the resumed turn answered "${answer.slice(0, 200)}"`);
    check((await count('turn-end')) === ends + 1, `the resumed turn has ${(await count('turn-end')) - ends} ends`);
    check(!(await resume.isVisible()), 'Resume is still offered after the answer');
    check((await chat().locator('[data-testid="tool-card"][data-tool="read_file"]').count()) === cards + 1,
      'the read_file card is not shown once');
    const requests = (await requestsSince(mark)).slice(held);
    check(requests.length === 1, `Resume sent ${requests.length} model requests, expected 1`);
    const last = requests[0].body.messages.at(-1);
    check(last.role === 'tool' && String(last.content).includes('hello from the demo'),
      `the resumed request does not end in the read_file result: ${JSON.stringify(last).slice(0, 300)}`);
    await shot('kill-resumed');
  });

  // Issue 46 item 2: models switched in the picker, the engine killed and restarted by the extension: the next request
  // carries the model the chip shows, not the one of the first launch.
  await scenario('model-after-crash', 150_000, async () => {
    const ready = async () => !(await byTest('sidecar-banner').isVisible());
    const chip = byTest('pick-model');
    const pickModel = async (model) => {
      await runCommand(page, 'Sunwell: Select Model');
      const input = page.locator('.quick-input-widget input.input').first();
      await input.fill(model);
      await page.locator('.quick-input-list .monaco-list-row').filter({ hasText: 'Use the model string typed above' }).first().click();
      await until(async () => (await chip.innerText()).includes(model.split(':').pop()),
        { timeoutMs: 15_000, message: `the chip does not show ${model}` });
    };
    await until(ready, { timeoutMs: 45_000, message: 'the engine was not ready to start with' });
    await pickModel('openai:gpt-4o-mini');
    await pickModel('openai:gpt-4.1');
    const before = sidecars();
    check(before.length === 1, `expected one sidecar, found ${JSON.stringify(before)}`);
    process.kill(before[0].pid, 'SIGKILL');
    await until(async () => {
      const now = sidecars();
      return now.length === 1 && now[0].pid !== before[0].pid && (await ready()) ? now : false;
    }, { timeoutMs: 60_000, message: 'the extension did not restart the engine' });
    await clearNotifications(page);
    await runCommand(page, 'Sunwell: Open Chat');
    await clickViewAction('New Session');
    await until(async () => (await count('user-message')) === 0 && (await byTest('send-button').isVisible()),
      { timeoutMs: 15_000, message: 'no new, idle session to start from' });
    const mark = await script('chat');
    const ends = await count('turn-end');
    await send('Which model answers?');
    await waitTurnEnd(ends, 'completed');
    const requests = await requestsSince(mark);
    check(requests.length >= 1, 'no request reached the provider');
    const shown = await chip.innerText();
    check(requests.every((r) => r.body.model === 'gpt-4.1'),
      `the chip shows "${shown}" and the requests went out with ${JSON.stringify(requests.map((r) => r.body.model))}`);
    await shot('model-after-crash');
    await pickModel('openai:gpt-4o');
  });
}

/** Issue 44: a server the agent starts in the background, in the processes strip: its port opened, then stopped.
 *  Registered last: it leaves the trust level at full. */
async function backgroundScenarios() {
  await scenario('background-server', 150_000, async () => {
    await runCommand(page, 'Sunwell: Set Trust Level');
    // full: the process has the network, so it listens on this machine's loopback, where a browser reaches it
    await page.locator('.quick-input-list .monaco-list-row').filter({ hasText: 'full' }).first().click();
    await sleep(1000); // the setting reaches the engine
    await runCommand(page, 'Sunwell: Open Chat');
    await clickViewAction('New Session');
    await byTest('welcome').waitFor({ state: 'visible', timeout: 5000 });
    await script('background-server');
    const ends = await count('turn-end');
    await send('Start a web server for the workspace and keep it running');
    const approval = chat().locator('[data-testid="approval-card"][data-state="pending"]').last();
    await approval.waitFor({ timeout: 30_000 });
    const port = Number(/http\.server (\d+)/.exec(await approval.locator('[data-testid="approval-command"]').innerText())?.[1]);
    check(port > 0, 'the card does not show the command');
    check(/keeps running/.test(await approval.locator('[data-testid="approval-background"]').innerText()),
      'the card does not say the command keeps running');
    await clearNotifications(page);
    await shot('background-approval');
    await approval.locator('[data-testid="approval-allow"]').click();
    await waitTurnEnd(ends, 'completed');

    const strip = byTest('processes-strip');
    const row = strip.locator('[data-testid="process-row"]').first();
    await row.waitFor({ timeout: 10_000 });
    check(await row.getAttribute('data-state') === 'running', `the row says ${await row.getAttribute('data-state')}`);
    const open = row.locator(`[data-testid="process-open"][data-port="${port}"]`);
    await open.waitFor({ timeout: 15_000 }).catch(async () => {
      throw new Error(`no Open for port ${port} in the row: ${nbsp(await row.innerText())}`);
    });
    check(!(await open.isDisabled()), `Open is disabled: ${await open.getAttribute('title')}`);
    await until(async () => /Serving HTTP/.test(await row.locator('[data-testid="process-tail"]').innerText().catch(() => '')),
      { timeoutMs: 10_000, message: 'the row shows no live tail' });
    const served = await fetch(`http://127.0.0.1:${port}/a.txt`).then((r) => r.text());
    check(served.includes('hello from the demo'), `the server answered ${served.slice(0, 100)}`);
    await until(async () => /GET \/a\.txt/.test(await row.locator('[data-testid="process-tail"]').innerText()),
      { timeoutMs: 10_000, message: 'the tail does not follow the server\'s log' });
    log(`  row: ${nbsp(await row.innerText()).replace(/\s+/g, ' ')}`);
    await shot('background-strip');

    const popup = browser.waitForEvent('page', { timeout: 8000 }).catch(() => null);
    await open.click();
    const dialog = page.locator('.monaco-dialog-box');
    const opened = await Promise.race([
      dialog.waitFor({ state: 'visible', timeout: 8000 }).then(() => 'dialog', () => null),
      popup.then((p) => (p ? p : null)),
    ]);
    check(opened, 'Open in browser did nothing');
    if (opened === 'dialog') {
      log(`  open: VS Code asks: ${nbsp(await dialog.innerText()).replace(/\s+/g, ' ').slice(0, 200)}`);
      await shot('background-open-confirm');
      await dialog.locator('.monaco-button').filter({ hasText: 'Cancel' }).first().click();
    } else {
      await opened.waitForLoadState('domcontentloaded').catch(() => undefined);
      log(`  open: a new tab at ${opened.url()}`);
      check(opened.url().includes(`127.0.0.1:${port}/`) || opened.url().includes(`/proxy/${port}/`), `the new tab is ${opened.url()}`);
      await opened.close();
      await page.bringToFront();
    }

    const userSettings = readFileSync(path.join(DATA, 'User', 'settings.json'), 'utf8');
    const wide = (await page.locator('.part.sidebar').first().boundingBox()).width;
    await setTheme('Default Light Modern');
    await dragSidebarTo(280);
    try {
      const overflow = () => chat().locator('footer.composer, .processes').evaluateAll((els) =>
        els.filter((el) => el.scrollWidth > el.clientWidth + 1).map((el) => `${el.className}: ${el.scrollWidth} > ${el.clientWidth}`));
      check((await overflow()).length === 0, `the strip overflows sideways at 280 px: ${(await overflow()).join('; ')}`);
      const stopBox = await row.locator('[data-testid="process-stop"]').boundingBox();
      const stripBox = await strip.boundingBox();
      check(stopBox && stopBox.x + stopBox.width <= stripBox.x + stripBox.width + 1, 'Stop is cut off at 280 px');
      await shot('background-strip-light-narrow');
      await row.locator('[data-testid="process-stop"]').click();
      await until(async () => (await row.getAttribute('data-state')) === 'stopped',
        { timeoutMs: 15_000, message: 'the row does not say stopped after Stop' });
      check(await row.locator('[data-testid="process-open"]').count() === 0, 'Open is still offered for a stopped server');
      const gone = await fetch(`http://127.0.0.1:${port}/`).then(() => false, () => true);
      check(gone, 'the server still answers after Stop');
      log(`  stopped: ${nbsp(await row.innerText()).replace(/\s+/g, ' ')}`);
      await shot('background-stopped-light-narrow');
      await row.locator('[data-testid="process-dismiss"]').click();
      await strip.waitFor({ state: 'hidden', timeout: 5000 });
    } finally {
      await dragSidebarTo(wide).catch((err) => log(`  (sidebar not restored: ${err.message})`));
      await setTheme('Default Dark Modern').catch((err) => log(`  (${err.message})`));
      writeFileSync(path.join(DATA, 'User', 'settings.json'), userSettings);
    }
  });
  await worktreeScenarios();
}

/** A row of the open quick pick, by its text, clicked. */
async function pickRow(text) {
  const row = page.locator('.quick-input-list .monaco-list-row').filter({ hasText: text }).first();
  await row.waitFor({ timeout: 10_000 });
  await row.click();
}

async function toast(text, timeoutMs = 20_000) {
  await until(async () => (await page.locator('.notifications-toasts').innerText().catch(() => '')).includes(text),
    { timeoutMs, message: `no "${text}" notification (${await page.locator('.notifications-toasts').innerText().catch(() => '')})` });
}

// Worktree sessions (issue 48): a session in its own git worktree, listed, reviewed, merged; another discarded.
// Last of all: it makes the workspace a git repository.
/** git in the e2e workspace, its hooks off: the run (`status`, `stdout`). */
const gitRun = (...args) => spawnSync('git', ['-c', 'core.hooksPath=/dev/null', '-c', 'user.name=E2E', '-c', 'user.email=e2e@localhost',
  ...args], { cwd: WS, encoding: 'utf8' });

async function worktreeScenarios() {
  await scenario('worktree-sessions', 180_000, async () => {
    const git = (...args) => {
      const run = gitRun(...args);
      check(run.status === 0, `git ${args.join(' ')}: ${run.stderr}`);
      return run.stdout;
    };
    if (!existsSync(path.join(WS, '.git'))) {
      git('init', '-q', '-b', 'main');
      git('add', '-A');
      git('commit', '-q', '-m', 'the e2e workspace');
    }
    const branch = git('branch', '--show-current').trim();

    // New Session in Worktree, named: the chat's lines go to worktree "plan"
    await script('worktree-write');
    await runCommand(page, 'Sunwell: New Session in Worktree');
    await answerInputBox('plan');
    await until(async () => (await byTest('worktree-chip').isVisible()) && (await byTest('worktree-chip').innerText()).includes('plan'),
      { timeoutMs: 10_000, message: 'the chat does not show its worktree' });
    const ends = await count('turn-end');
    await send('Write a plan');
    const approval = chat().locator('[data-testid="approval-card"][data-state="pending"]').last();
    await approval.waitFor({ timeout: 30_000 });
    check((await approval.innerText()).includes('PLAN.md'), `the approval does not name the file: ${await approval.innerText()}`);
    await clearNotifications(page);
    await shot('worktree-approval');
    await approval.locator('[data-testid="approval-allow"]').click();
    await waitTurnEnd(ends, 'completed', 60_000);
    check(!existsSync(path.join(WS, 'PLAN.md')), 'the worktree session wrote into the workspace');
    check(git('show', 'sunwell/plan:PLAN.md').includes('made in a worktree'), 'the branch sunwell/plan has no PLAN.md');
    await shot('worktree-turn-done');

    // Listed as done; Review opens its diff against the base, file by file
    await runCommand(page, 'Sunwell: Worktree Sessions');
    const row = page.locator('.quick-input-list .monaco-list-row').filter({ hasText: 'plan' }).first();
    await row.waitFor({ timeout: 10_000 });
    const rowText = nbsp(await row.innerText());
    check(/sunwell\/plan/.test(rowText) && /done/.test(rowText), `the row reads "${rowText}"`);
    await shot('worktree-list');
    await row.click();
    await pickRow('Review');
    await until(async () => (await page.locator('.tabs-container .tab.active').innerText().catch(() => '')).includes('sunwell/plan'),
      { timeoutMs: 15_000, message: 'no review editor for sunwell/plan' });
    await until(async () => nbsp(await page.locator('.part.editor').innerText().catch(() => '')).includes('made in a worktree'),
      { timeoutMs: 15_000, message: 'the review does not show PLAN.md\'s new lines' });
    check(nbsp(await page.locator('.part.editor').innerText()).includes('PLAN.md'), 'the review does not name PLAN.md');
    await shot('worktree-review');
    await runCommand(page, 'View: Close All Editors');

    // Merge into the branch checked out: the file is in the workspace
    await runCommand(page, 'Sunwell: Worktree Sessions');
    await pickRow('plan');
    await pickRow('Merge');
    await pickRow(branch);
    await toast('merged sunwell/plan');
    check(readFileSync(path.join(WS, 'PLAN.md'), 'utf8').includes('made in a worktree'), 'Merge did not bring PLAN.md');
    await shot('worktree-merged');
    await clearNotifications(page);

    // Another, named from its first line, discarded (asked first)
    await script('worktree-idea');
    await runCommand(page, 'Sunwell: New Session in Worktree');
    await answerInputBox('');
    await byTest('welcome').waitFor({ state: 'visible', timeout: 10_000 }); // the new, empty chat
    await send('Try another idea');
    await waitTurnEnd(0, 'completed', 60_000);
    check((await byTest('worktree-chip').innerText()).includes('try-another-idea'), `the chip reads ${await byTest('worktree-chip').innerText()}`);
    await runCommand(page, 'Sunwell: Worktree Sessions');
    await pickRow('try-another-idea');
    await pickRow('Discard');
    const dialog = page.locator('.monaco-dialog-box');
    await dialog.waitFor({ state: 'visible', timeout: 10_000 });
    await shot('worktree-discard-asks');
    await dialog.locator('.monaco-button').filter({ hasText: 'Discard' }).first().click();
    await toast('removed worktree try-another-idea');
    check(!git('branch', '--list', 'sunwell/*').includes('try-another-idea'), 'the branch was not removed');
    await runCommand(page, 'Sunwell: Worktree Sessions');
    await page.locator('.quick-input-list .monaco-list-row').first().waitFor({ timeout: 10_000 });
    const rows = await page.locator('.quick-input-list .monaco-list-row').allInnerTexts();
    check(rows.length === 1 && /merged/.test(rows[0]), `the list after Discard: ${JSON.stringify(rows)}`);
    await shot('worktree-list-after');
    await page.keyboard.press('Escape');
  });

  // Two at once: alpha waits for its approval while beta's turn runs; alpha's is answered from its card (Continue),
  // beta's, in the background, from its notification, never on alpha's card; alpha merged, beta discarded.
  await scenario('worktree-side-by-side', 180_000, async () => {
    const rowsNow = async () => {
      await runCommand(page, 'Sunwell: Worktree Sessions');
      await page.locator('.quick-input-list .monaco-list-row').first().waitFor({ timeout: 10_000 });
      return (await page.locator('.quick-input-list .monaco-list-row').allInnerTexts()).map(nbsp);
    };
    const stateOf = (rows, name) => rows.find((r) => r.startsWith(name))?.split('·')[1]?.trim().split('\n')[0];
    const mark = await script('worktree-two');
    check(gitRun('branch', 'release').status === 0, 'git branch release failed');
    await runCommand(page, 'Sunwell: New Session in Worktree');
    await answerInputBox('alpha');
    await pickRow('release'); // the repository has another branch now: where to start from is asked
    await byTest('welcome').waitFor({ state: 'visible', timeout: 10_000 });
    await send('Write ALPHA.md');
    const alphaCard = chat().locator('[data-testid="approval-card"][data-state="pending"]').last();
    await alphaCard.waitFor({ timeout: 30_000 });
    check((await alphaCard.innerText()).includes('ALPHA.md'), `alpha's card: ${await alphaCard.innerText()}`);

    // beta starts while alpha waits: alpha's turn goes on in the background, its approval still pending
    await runCommand(page, 'Sunwell: New Session in Worktree');
    await answerInputBox('beta');
    await pickRow('checked out');
    await byTest('welcome').waitFor({ state: 'visible', timeout: 10_000 });
    await send('Write BETA.md');
    await until(async () => (await requestsSince(mark)).some((r) => JSON.stringify(r.body).includes('BETA')),
      { timeoutMs: 30_000, message: 'beta never asked the model' });
    let rows = await rowsNow();
    check(stateOf(rows, 'alpha') === 'waiting for approval' && stateOf(rows, 'beta') === 'running',
      `the list while both run: ${JSON.stringify(rows)}`);
    check(/from release/.test(rows.find((r) => r.startsWith('alpha'))) && /from main/.test(rows.find((r) => r.startsWith('beta'))),
      `the bases listed: ${JSON.stringify(rows)}`);
    await shot('worktree-two-running');

    // alpha's approval answered while beta runs: Continue shows it as its card again
    await pickRow('alpha');
    await pickRow('Continue');
    const again = chat().locator('[data-testid="approval-card"][data-state="pending"]').last();
    await again.waitFor({ timeout: 15_000 });
    check((await again.innerText()).includes('ALPHA.md'), `the card after Continue: ${await again.innerText()}`);
    await shot('worktree-alpha-continued');
    const ends = await count('turn-end');
    await again.locator('[data-testid="approval-allow"]').click();
    await waitTurnEnd(ends, 'completed', 60_000);
    check(gitRun('show', 'sunwell/alpha:ALPHA.md').stdout.includes('made side by side'), 'sunwell/alpha has no ALPHA.md');
    rows = await rowsNow();
    check(stateOf(rows, 'alpha') === 'done' && stateOf(rows, 'beta') === 'running', `the list after alpha: ${JSON.stringify(rows)}`);
    await page.keyboard.press('Escape');

    // beta's model answers now: its approval comes as a notification naming it, not as a card of alpha's chat
    await clearNotifications(page);
    await json(`${fake.control}/release/beta`, { method: 'POST' });
    const note = page.locator('.notifications-toasts .notification-toast').filter({ hasText: 'worktree session beta' }).first();
    await note.waitFor({ timeout: 30_000 });
    check((await note.innerText()).includes('BETA.md'), `the notification: ${await note.innerText()}`);
    check(await chat().locator('[data-testid="approval-card"][data-state="pending"]').count() === 0,
      'beta\'s approval showed on alpha\'s chat');
    await shot('worktree-beta-asks');
    await note.locator('.monaco-button').filter({ hasText: 'Allow' }).first().click();
    await until(async () => gitRun('show', 'sunwell/beta:BETA.md').status === 0, { timeoutMs: 30_000, message: 'sunwell/beta has no BETA.md' });
    check(!existsSync(path.join(WS, 'BETA.md')) && !existsSync(path.join(WS, 'ALPHA.md')), 'a worktree session wrote into the workspace');
    check(gitRun('show', 'sunwell/beta:ALPHA.md').status !== 0, 'beta\'s branch has alpha\'s file');
    await until(async () => { rows = await rowsNow(); await page.keyboard.press('Escape'); return stateOf(rows, 'beta') === 'done'; },
      { timeoutMs: 30_000, message: 'beta never listed done' });

    // alpha merged, beta discarded
    await runCommand(page, 'Sunwell: Worktree Sessions');
    await pickRow('alpha');
    await pickRow('Merge');
    await pickRow(gitRun('branch', '--show-current').stdout.trim());
    await toast('merged sunwell/alpha');
    check(readFileSync(path.join(WS, 'ALPHA.md'), 'utf8').includes('made side by side'), 'Merge did not bring ALPHA.md');
    await runCommand(page, 'Sunwell: Worktree Sessions');
    await pickRow('beta');
    await pickRow('Discard');
    const dialog = page.locator('.monaco-dialog-box');
    await dialog.waitFor({ state: 'visible', timeout: 10_000 });
    await dialog.locator('.monaco-button').filter({ hasText: 'Discard' }).first().click();
    await toast('removed worktree beta');
    check(!gitRun('branch', '--list', 'sunwell/beta').stdout.trim(), 'the branch sunwell/beta was not removed');
    await shot('worktree-side-by-side-after');
  });
}

let failedSetup = false;

/** On a failure, the extension's own log (one per extension host: a reload starts another), its tail on stdout:
 *  all a CI run keeps is what it printed. */
function printExtensionLogs() {
  const logs = path.join(DATA, 'logs');
  if (!existsSync(logs)) return;
  for (const file of readdirSync(logs, { recursive: true }).map(String).filter((f) => f.endsWith('Sunwell.log')).sort()) {
    const lines = readFileSync(path.join(logs, file), 'utf8').split('\n').filter((l) => !l.includes('] Processing '));
    log(`--- ${file} (last 40 lines)`);
    for (const line of lines.slice(-40)) log(`  ${line}`);
  }
}

async function cleanup() {
  await browser?.close().catch(() => undefined);
  fake?.child.stdin?.end();
  await stopAll();
  if (results.some((r) => !r.ok)) printExtensionLogs();
  if (env.E2E_KEEP === '1' || failedSetup) log(`kept ${E2E}`);
  else rmSync(E2E, { recursive: true, force: true });
}

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, async () => {
    console.error(`e2e: ${sig}: stopping`);
    await cleanup();
    console.log(`e2e: ${results.filter((r) => r.ok).length} passed, ${results.filter((r) => !r.ok).length + 1} failed`);
    process.exit(1);
  });
}

try {
  await main();
} catch (err) {
  failedSetup = true;
  if (!results.some((r) => !r.ok)) results.push({ name: 'setup', ok: false, error: err.message });
  console.error(`e2e: stopped: ${err.message}`);
  for (const file of ['code-server.log', 'install-extension.log']) {
    const p = path.join(LOGS, file);
    if (existsSync(p)) console.error(`--- ${file} (last lines)\n${readFileSync(p, 'utf8').split('\n').slice(-15).join('\n')}`);
  }
}
await cleanup();
const passed = results.filter((r) => r.ok).length;
const failed = results.length - passed;
console.log('');
for (const r of results) console.log(`  ${r.ok ? 'pass' : 'FAIL'}  ${r.name.padEnd(24)} ${r.seconds?.toFixed(1) ?? ''}s${r.ok ? '' : `  ${r.error.split('\n')[0]}`}`);
console.log(`e2e: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);

#!/usr/bin/env node
// Drives a running Sunwell-in-VS-Code (scripts/start.sh) once, the way a newcomer would: open the URL, open the chat
// from the palette, send one message, wait for the answer, screenshot each step into tests/e2e/artifacts/start-*.png.
//   node tests/e2e/chat-once.mjs URL ["message"] [timeout seconds, default 240]
// Prints the answer; exits 1 when the turn does not complete.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { chatFrame, clearNotifications, runCommand, sleep, until, waitForWorkbench } from './lib.mjs';

const [url, message = 'Read a.txt and tell me what it says', timeout = '240'] = process.argv.slice(2);
if (!url) {
  console.error('usage: node tests/e2e/chat-once.mjs URL ["message"] [timeout seconds]');
  process.exit(2);
}
const artifacts = path.join(path.dirname(fileURLToPath(import.meta.url)), 'artifacts');
mkdirSync(artifacts, { recursive: true });
const profile = mkdtempSync(path.join(tmpdir(), 'sunwell-chat-once-'));
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.E2E_CHROMIUM ?? '/usr/bin/chromium',
  headless: true,
  viewport: { width: 1400, height: 860 },
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
});
let code = 1;
try {
  const page = browser.pages()[0] ?? await browser.newPage();
  const shot = (name) => page.screenshot({ path: path.join(artifacts, `start-${name}.png`) });
  const t0 = Date.now();
  await page.goto(url);
  await waitForWorkbench(page);
  await sleep(3000);
  await shot('1-workbench');
  await runCommand(page, 'Sunwell: Open Chat');
  const chat = chatFrame(page);
  await chat.locator('[data-testid="chat-input"]').waitFor({ timeout: 30_000 });
  await until(async () => !(await chat.locator('[data-testid="sidecar-banner"]').isVisible()),
    { timeoutMs: 60_000, message: 'the engine did not become ready' });
  await clearNotifications(page);
  const ends = await chat.locator('[data-testid="turn-end"]').count();
  await chat.locator('[data-testid="chat-input"]').fill(message);
  await page.keyboard.press('Enter');
  console.log(`sent: ${message}`);
  await sleep(1500);
  await shot('2-sent');
  const sent = Date.now();
  await until(async () => (await chat.locator('[data-testid="turn-end"]').count()) > ends,
    { timeoutMs: Number(timeout) * 1000, every: 500, message: 'the turn did not end' });
  const end = chat.locator('[data-testid="turn-end"]').last();
  const status = await end.getAttribute('data-status');
  const answer = (await chat.locator('[data-testid="assistant-message"]').allInnerTexts()).at(-1) ?? '';
  const tools = await chat.locator('[data-testid="tool-card"]').evaluateAll((cards) =>
    cards.map((c) => `${c.getAttribute('data-tool')}:${c.getAttribute('data-status')}`));
  await sleep(500);
  await shot('3-answer');
  console.log(`turn ${status} in ${((Date.now() - sent) / 1000).toFixed(1)}s (total ${((Date.now() - t0) / 1000).toFixed(1)}s)`);
  console.log(`tool cards: ${tools.join(', ') || '(none)'}`);
  console.log(`answer: ${answer}`);
  console.log(`turn end: ${await end.innerText()}`);
  code = status === 'completed' ? 0 : 1;
} catch (err) {
  console.error(`chat-once: ${err.message.split('\n')[0]}`);
  await browser.pages()[0]?.screenshot({ path: path.join(artifacts, 'start-FAILED.png') }).catch(() => undefined);
} finally {
  await browser.close();
  rmSync(profile, { recursive: true, force: true });
}
process.exit(code);

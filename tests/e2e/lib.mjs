// Helpers of the end-to-end run: processes in their own process groups (and stopped with all their descendants),
// HTTP polling, and VS Code workbench gestures (command palette, notifications, the chat webview's nested frames).
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

// ---- processes ------------------------------------------------------------------------------------------------

const started = [];

/** Spawns `command` as the leader of a new process group (detached = setsid); its output goes to `logFd`. */
export function startGroup(name, command, args, { env, cwd, logFd, stdio } = {}) {
  const child = spawn(command, args, { env, cwd, detached: true, stdio: stdio ?? ['ignore', logFd ?? 'ignore', logFd ?? 'ignore'] });
  started.push({ name, child });
  child.on('error', (err) => console.error(`e2e: ${name} failed to start: ${err.message}`));
  return child;
}

function childrenByParent() {
  const map = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // /proc/PID/stat: "pid (comm) state ppid pgrp ...": comm may contain spaces and parentheses
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ppid = Number(fields[1]);
      if (!map.has(ppid)) map.set(ppid, []);
      map.get(ppid).push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return map;
}

/** The pid and every process below it (a child that started its own group or session is still found). */
export function descendants(pid) {
  const map = childrenByParent();
  const out = [];
  const walk = (p) => {
    for (const c of map.get(p) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(pid);
  return out;
}

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export { sleep };

/** Stops one started group: SIGTERM to the group and every descendant, SIGKILL to what is left after `graceMs`. */
export async function stopGroup(child, graceMs = 3000) {
  if (!child?.pid) return;
  const pids = [child.pid, ...descendants(child.pid)];
  const signal = (sig) => {
    try {
      process.kill(-child.pid, sig);
    } catch {
      // the group is gone
    }
    for (const pid of pids) {
      try {
        process.kill(pid, sig);
      } catch {
        // gone
      }
    }
  };
  signal('SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline && pids.some(alive)) await sleep(100);
  if (pids.some(alive)) signal('SIGKILL');
}

/** Stops everything startGroup started, newest first. */
export async function stopAll() {
  for (const { child } of started.reverse()) await stopGroup(child);
  started.length = 0;
}

// ---- HTTP ---------------------------------------------------------------------------------------------------

export async function waitForHttp(url, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url);
      if (res.ok) return;
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = err.cause?.code ?? err.message;
    }
    await sleep(200);
  }
  throw new Error(`${what} did not answer at ${url} within ${timeoutMs / 1000}s (${last})`);
}

export async function json(url, options) {
  const res = await fetch(url, options);
  if (!res.ok) throw new Error(`${options?.method ?? 'GET'} ${url}: HTTP ${res.status} ${await res.text()}`);
  return res.json();
}

// ---- assertions and polling ---------------------------------------------------------------------------------

export function check(condition, message) {
  if (!condition) throw new Error(message);
}

/** Polls `probe` until it returns a truthy value; throws `message` (with the last value) after `timeoutMs`. */
export async function until(probe, { timeoutMs = 15_000, every = 100, message = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await probe();
      if (last) return last;
    } catch (err) {
      last = err.message;
    }
    if (Date.now() > deadline) throw new Error(`${message} (after ${timeoutMs / 1000}s; last: ${JSON.stringify(last)?.slice(0, 300)})`);
    await sleep(every);
  }
}

export function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: timed out after ${ms / 1000}s`)), ms);
    }),
  ]);
}

// ---- the workbench --------------------------------------------------------------------------------------------

export async function waitForWorkbench(page, timeoutMs = 60_000) {
  await page.locator('.monaco-workbench').waitFor({ timeout: timeoutMs });
  await page.locator('.statusbar').waitFor({ timeout: timeoutMs });
}

/** Runs a command from the palette (F1), by its label as shown there, e.g. "Sunwell: Open Chat". */
export async function runCommand(page, label) {
  // The row of exactly this command ("View: Close All Editors", not "… in Group" above it), clicked: Enter would run
  // whichever row the palette ranked first.
  const rows = '.quick-input-list .monaco-list-row';
  const row = page.locator(`${rows}[aria-label="${label}"], ${rows}[aria-label^="${label},"]`).first();
  // The palette lists the commands known when it opened (on a loaded machine an extension's may come later), and it
  // closes when the focus leaves it (a Settings editor saving a value it was typed into re-renders and takes it):
  // then it is opened again.
  for (let attempt = 1; ; attempt++) {
    await quickInput(page, `>${label}`);
    if (await row.waitFor({ timeout: 8000 }).then(() => true, () => false)) break;
    const focused = await page.evaluate(() => {
      const el = document.activeElement;
      return el ? `${el.tagName}.${String(el.className).slice(0, 80)}` : 'nothing';
    });
    console.log(`  (palette for "${label}" not shown, attempt ${attempt}; focus on ${focused})`);
    if (attempt === 3) throw new Error(`the command palette would not show "${label}" (focus on ${focused})`);
    await page.keyboard.press('Escape');
    await sleep(2000);
  }
  await row.click();
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: 10_000 }).catch(() => undefined);
}

/** Opens the quick input with F1 and types `text` (">" commands, ":" a line, else a file name). */
export async function quickInput(page, text) {
  const widget = page.locator('.quick-input-widget');
  const input = widget.locator('input.input').first();
  // F1 does not reach the workbench while a webview (a markdown preview, the chat) has the focus: then the command
  // center in the title bar opens the same quick input. Something that takes the focus as it redraws (a Settings
  // editor saving, the chat's input focused by a command just run) closes the quick input at once: opened again.
  for (let attempt = 1; ; attempt++) {
    if (!(await widget.isVisible())) {
      await page.keyboard.press('F1');
      if (!(await widget.waitFor({ state: 'visible', timeout: 3000 }).then(() => true, () => false))) {
        await page.locator('.command-center .command-center-center').first().click().catch(() => undefined);
        await widget.waitFor({ state: 'visible', timeout: 5000 }).catch(() => undefined);
      }
    }
    if (await input.fill(text, { timeout: 3000 }).then(() => true, () => false)) return;
    if (attempt === 3) throw new Error(`the quick input would not open to take "${text}", three times`);
    await sleep(1000);
  }
}

export async function openFile(page, name) {
  await quickInput(page, name);
  await page.locator('.quick-input-list .monaco-list-row').filter({ hasText: name }).first().waitFor({ timeout: 10_000 });
  await page.keyboard.press('Enter');
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: 10_000 }).catch(() => undefined);
  await page.locator(`.tabs-container .tab[aria-label*="${name}"]`).first().waitFor({ timeout: 10_000 });
}

export async function clearNotifications(page) {
  if ((await page.locator('.notifications-toasts .notification-toast').count()) === 0) return;
  await runCommand(page, 'Notifications: Clear All Notifications').catch(() => undefined);
}

/** The chat webview's document: the view's iframe (extensionId sunwell.sunwell), then its #active-frame. */
export function chatFrame(page) {
  return page.frameLocator('iframe.webview[src*="extensionId=sunwell.sunwell"]').first().frameLocator('iframe#active-frame');
}

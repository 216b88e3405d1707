// Whether the wheels a platform .vsix carries can be installed by a given Python: pip picks among them by their
// tags, and when none fits (another Python version, another architecture) the install would only fail later, offline,
// with pip's "no matching distribution". This says why first, in words. Pure; python.ts runs the probe.
import type { Probe } from './launch';

interface WheelTags { project: string; tags: Array<[string, string, string]> }

function parseWheel(file: string): WheelTags | null {
  if (!file.endsWith('.whl')) return null;
  const parts = file.slice(0, -4).split('-');
  if (parts.length !== 5 && parts.length !== 6) return null;
  const [py, abi, plat] = parts.slice(-3);
  const tags: Array<[string, string, string]> = [];
  for (const p of py.split('.')) for (const a of abi.split('.')) for (const t of plat.split('.')) tags.push([p, a, t]);
  return { project: parts[0].toLowerCase().replace(/_/g, '-'), tags };
}

/** The wheel platform tags that run on sys.platform + platform.machine(); null for a platform no package is for. */
export function platformPattern(platform: string, machine: string): RegExp | null {
  const arch = machine.toLowerCase();
  const x64 = arch === 'x86_64' || arch === 'amd64';
  const arm64 = arch === 'arm64' || arch === 'aarch64';
  if (platform.startsWith('linux')) return x64 ? /^(manylinux\w*|linux)_x86_64$/ : arm64 ? /^(manylinux\w*|linux)_aarch64$/ : null;
  if (platform === 'darwin') return x64 ? /^macosx_\d+_\d+_(x86_64|intel|universal2?)$/ : arm64 ? /^macosx_\d+_\d+_(arm64|universal2)$/ : null;
  if (platform === 'win32') return x64 ? /^win_amd64$/ : arm64 ? /^win_arm64$/ : null;
  return null;
}

function serves([py, abi]: [string, string, string], minor: number): boolean {
  if (py === 'py3' || py === `py3${minor}`) return true;
  if (py === `cp3${minor}` && [`cp3${minor}`, 'none', 'abi3'].includes(abi)) return true;
  const from = /^cp3(\d+)$/.exec(py);
  return abi === 'abi3' && from !== null && Number(from[1]) <= minor;
}

function describePlatform(tag: string): string {
  const system = tag.startsWith('macosx') ? 'macOS' : tag.startsWith('win') ? 'Windows' : 'Linux';
  const arch = /(x86_64|amd64)$/.test(tag) ? 'x86_64' : /(arm64|aarch64)$/.test(tag) ? 'arm64' : tag.split('_').pop();
  return `${system} ${arch}`;
}

/** What the compiled wheels are for, as people say it: "CPython 3.11, 3.12 on macOS arm64". */
function carried(wheels: WheelTags[]): string {
  const versions = new Set<number>();
  const platforms = new Set<string>();
  for (const wheel of wheels) {
    for (const [py, abi, plat] of wheel.tags) {
      if (plat === 'any') continue;
      if (/^cp3\d+$/.test(py) && abi !== 'abi3') versions.add(Number(py.slice(3)));
      platforms.add(describePlatform(plat));
    }
  }
  const sorted = [...versions].sort((a, b) => a - b).map((v) => `3.${v}`);
  return `CPython ${sorted.join(', ') || '3'} on ${[...platforms].sort().join(' / ')}`;
}

/**
 * null when every compiled project among `files` has a wheel this Python can install, else the sentence that says
 * why not: which Pythons and platform the package carries wheels for, and what this Python is.
 */
export function wheelsMismatch(files: string[], probe: Probe): string | null {
  const wheels = files.map(parseWheel).filter((w): w is WheelTags => w !== null);
  const compiled = wheels.filter((w) => w.tags.some(([, , plat]) => plat !== 'any'));
  if (compiled.length === 0) return null;
  const [major, minor] = probe.python;
  const pattern = probe.platform && probe.machine ? platformPattern(probe.platform, probe.machine) : null;
  const yours = `${probe.implementation === 'cpython' || !probe.implementation ? 'CPython' : probe.implementation} ${major}.${minor} on ${probe.platform ?? 'an unknown platform'} ${probe.machine ?? ''}`.trim();
  const fits = (w: WheelTags) => w.tags.some((tag) => tag[2] === 'any' || (pattern !== null && pattern.test(tag[2]) && major === 3 && serves(tag, minor)));
  const cpython = !probe.implementation || probe.implementation === 'cpython';
  const missing = [...new Set(compiled.map((w) => w.project))].filter((project) => !compiled.some((w) => w.project === project && fits(w)));
  if (cpython && missing.length === 0) return null;
  return `This Sunwell package carries its dependencies for ${carried(compiled)}; ${probe.executable || 'the Python'} is ${yours}` +
    ` (no wheel of ${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ', …' : ''} fits it).` +
    ' Install the Sunwell package built for your platform, or set sunwell.python to a Python the package supports.';
}

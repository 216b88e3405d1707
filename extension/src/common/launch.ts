// How the sidecar is started: which Python, whether `sunwell` is importable there, and how the private
// environment is installed. The decisions are pure (and unit-tested); python.ts runs the processes.
import * as path from 'node:path';

export const MIN_PYTHON: [number, number] = [3, 11];

/** Prints what the interpreter is and which sunwell (if any) it imports, as one JSON line. */
export const PROBE_SCRIPT = [
  'import json, platform, sys',
  'try:',
  '    import sunwell',
  '    version = getattr(sunwell, "__version__", "unknown")',
  'except Exception:',
  '    version = None',
  'print(json.dumps({"python": list(sys.version_info[:3]), "sunwell": version, "executable": sys.executable,',
  '                  "implementation": sys.implementation.name, "platform": sys.platform, "machine": platform.machine()}))',
].join('\n');

export interface Probe {
  python: number[];
  sunwell: string | null;
  executable: string;
  /** sys.implementation.name, sys.platform and platform.machine() (absent from an older probe's output). */
  implementation?: string;
  platform?: string;
  machine?: string;
}

export function parseProbe(stdout: string): Probe | null {
  const line = stdout.trim().split(/\r?\n/).pop() ?? '';
  try {
    const value = JSON.parse(line);
    if (Array.isArray(value.python) && (value.sunwell === null || typeof value.sunwell === 'string')) {
      return { python: value.python, sunwell: value.sunwell, executable: String(value.executable ?? ''),
        implementation: value.implementation, platform: value.platform, machine: value.machine };
    }
  } catch {
    // not our output: reported by the caller
  }
  return null;
}

export function pythonIsRecentEnough(probe: Probe): boolean {
  const [major, minor] = probe.python;
  return major > MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor >= MIN_PYTHON[1]);
}

/** `-P` (Python 3.11+, which the probe ensures): the sidecar starts in the workspace folder, and `-m` would otherwise
 *  put that folder first on the import path, so a repository's own `json.py` would run when it is opened. */
export const SERVE_ARGS = ['-P', '-m', 'sunwell', 'serve'];

/** The interpreter when nothing is configured: what the Python extension uses, else the usual command. */
export function defaultPython(platform: NodeJS.Platform): string {
  return platform === 'win32' ? 'python' : 'python3';
}

export function venvPython(venvDir: string, platform: NodeJS.Platform): string {
  return platform === 'win32' ? path.join(venvDir, 'Scripts', 'python.exe') : path.join(venvDir, 'bin', 'python');
}

/**
 * pip's arguments to install the bundled package into the private environment. A platform .vsix carries the
 * package as a wheel with the wheels of its dependencies: the install is offline first, and only if that fails
 * (e.g. a Python version the wheels were not made for) pip may fetch what is missing from the index. The wheel is
 * named by its file, never by the project name, so nothing of that name can come from the index instead. Without
 * wheels, pip builds the package from its source (a copy: the extension's folder may be read-only).
 */
export function pipInstallAttempts(target: { wheelsDir: string; wheel: string } | { sourceDir: string }): string[][] {
  const base = ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--upgrade'];
  if ('sourceDir' in target) return [[...base, target.sourceDir]];
  return [
    [...base, '--no-index', '--find-links', target.wheelsDir, target.wheel],
    [...base, '--find-links', target.wheelsDir, target.wheel],
  ];
}

/** The package's own wheel among the vendored ones. */
export function findSunwellWheel(files: string[]): string | undefined {
  return files.filter((f) => /^sunwell-[^-]+-py3-none-any\.whl$/.test(f)).sort().pop();
}

export interface InstallMarker {
  /** The extension version whose bundled package is installed. */
  version: string;
}

/** The private environment must be reinstalled when the extension that installed it was another version. */
export function markerIsCurrent(marker: InstallMarker | null, extensionVersion: string): boolean {
  return marker !== null && marker.version === extensionVersion;
}

/** What decides the interpreter: the same key means the same launch (an endpoint or a key change keeps it). */
export function interpreterKey(settings: { python: string; serverCommand: string[] }): string {
  return JSON.stringify([settings.python, settings.serverCommand]);
}

// How the sidecar is started: which Python, whether `sunwell` is importable there, and how the private
// environment is installed. The decisions are pure (and unit-tested); python.ts runs the processes.
import * as path from 'node:path';

export const MIN_PYTHON: [number, number] = [3, 11];

/** Prints what the interpreter is and which sunwell (if any) it imports, as one JSON line. */
export const PROBE_SCRIPT = [
  'import json, sys',
  'try:',
  '    import sunwell',
  '    version = getattr(sunwell, "__version__", "unknown")',
  'except Exception:',
  '    version = None',
  'print(json.dumps({"python": list(sys.version_info[:3]), "sunwell": version, "executable": sys.executable}))',
].join('\n');

export interface Probe {
  python: number[];
  sunwell: string | null;
  executable: string;
}

export function parseProbe(stdout: string): Probe | null {
  const line = stdout.trim().split(/\r?\n/).pop() ?? '';
  try {
    const value = JSON.parse(line);
    if (Array.isArray(value.python) && (value.sunwell === null || typeof value.sunwell === 'string')) {
      return { python: value.python, sunwell: value.sunwell, executable: String(value.executable ?? '') };
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

export const SERVE_ARGS = ['-m', 'sunwell', 'serve'];

/** The interpreter when nothing is configured: what the Python extension uses, else the usual command. */
export function defaultPython(platform: NodeJS.Platform): string {
  return platform === 'win32' ? 'python' : 'python3';
}

export function venvPython(venvDir: string, platform: NodeJS.Platform): string {
  return platform === 'win32' ? path.join(venvDir, 'Scripts', 'python.exe') : path.join(venvDir, 'bin', 'python');
}

/**
 * pip's arguments to install the bundled package into the private environment. With vendored wheels the install
 * is offline first; the second attempt (only when the first fails, e.g. a Python version without wheels) lets pip
 * fetch what is missing from the index.
 */
export function pipInstallAttempts(bundleDir: string, hasWheels: boolean): string[][] {
  const base = ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--upgrade'];
  const wheels = path.join(bundleDir, 'wheels');
  const attempts: string[][] = [];
  if (hasWheels) attempts.push([...base, '--no-index', '--find-links', wheels, bundleDir]);
  attempts.push([...base, ...(hasWheels ? ['--find-links', wheels] : []), bundleDir]);
  return attempts;
}

export interface InstallMarker {
  /** The extension version whose bundled package is installed. */
  version: string;
}

/** The private environment must be reinstalled when the extension that installed it was another version. */
export function markerIsCurrent(marker: InstallMarker | null, extensionVersion: string): boolean {
  return marker !== null && marker.version === extensionVersion;
}

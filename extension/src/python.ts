// Finds the Python that runs the sidecar and, when `sunwell` is not importable there, installs the package that
// ships inside the .vsix into a private virtual environment under the extension's global storage.
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  defaultPython, findSunwellWheel, markerIsCurrent, parseProbe, pipInstallAttempts, PROBE_SCRIPT, pythonIsRecentEnough, SERVE_ARGS,
  venvPython, type InstallMarker, type Probe,
} from './common/launch';
import type { Settings } from './common/settings';
import { wheelsMismatch } from './common/wheels';

export interface Launch {
  command: string;
  args: string[];
  /** Where the command came from, for the log. */
  source: string;
}

export type Resolution =
  | { kind: 'ready'; launch: Launch }
  | { kind: 'notInstalled'; python: string; probe: Probe }
  | { kind: 'noPython'; python: string; reason: string };

const MARKER = 'sunwell-extension.json';

function run(command: string, args: string[], options: { env?: NodeJS.ProcessEnv; timeoutMs?: number; cwd?: string } = {}) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(command, args, { env: options.env, timeout: options.timeoutMs ?? 60_000, cwd: options.cwd, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) || (error && code === -1 ? error.message : '') });
      });
  });
}

export class PythonEnvironments {
  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  get privateEnvDir(): string {
    return path.join(this.context.globalStorageUri.fsPath, 'python-env');
  }

  get privatePython(): string {
    return venvPython(this.privateEnvDir, process.platform);
  }

  /** The .vsix carries the package under dist/python; run from the repository, the repository root is one too. */
  get bundleDir(): string {
    const packaged = path.join(this.context.extensionPath, 'dist', 'python');
    return fs.existsSync(path.join(packaged, 'pyproject.toml')) ? packaged : this.context.extensionPath;
  }

  /** `sunwell.python`, else the Python extension's interpreter for this workspace, else python3. */
  async basePython(settings: Settings): Promise<string> {
    if (settings.python) return substituteWorkspace(settings.python);
    const fromExtension = await this.pythonExtensionInterpreter();
    return fromExtension ?? defaultPython(process.platform);
  }

  async probe(python: string, env: NodeJS.ProcessEnv): Promise<Probe | { error: string }> {
    const result = await run(python, ['-c', PROBE_SCRIPT], { env, timeoutMs: 30_000 });
    const probe = result.code === 0 ? parseProbe(result.stdout) : null;
    if (probe) return probe;
    return { error: (result.stderr || result.stdout).trim().split('\n').pop() || `exit code ${result.code}` };
  }

  async resolve(settings: Settings, env: NodeJS.ProcessEnv): Promise<Resolution> {
    if (settings.serverCommand.length > 0) {
      const [command, ...args] = settings.serverCommand;
      return { kind: 'ready', launch: { command, args, source: 'sunwell.serverCommand' } };
    }
    const python = await this.basePython(settings);
    const probe = await this.probe(python, env);
    if ('error' in probe) return { kind: 'noPython', python, reason: probe.error };
    if (probe.sunwell !== null) {
      return { kind: 'ready', launch: { command: python, args: SERVE_ARGS, source: `${python} (sunwell ${probe.sunwell})` } };
    }
    if (fs.existsSync(this.privatePython)) {
      const marker = this.readMarker();
      if (!markerIsCurrent(marker, this.extensionVersion)) {
        this.log.info(`private environment was installed by ${marker?.version ?? 'an unknown version'}; upgrading`);
        await this.install(python);
      }
      const own = await this.probe(this.privatePython, env);
      if (!('error' in own) && own.sunwell !== null) {
        return { kind: 'ready', launch: { command: this.privatePython, args: SERVE_ARGS, source: `private environment (sunwell ${own.sunwell})` } };
      }
    }
    if (!pythonIsRecentEnough(probe)) {
      return { kind: 'noPython', python, reason: `Python ${probe.python.join('.')} is too old; Sunwell needs 3.11 or newer` };
    }
    return { kind: 'notInstalled', python, probe };
  }

  /** Creates (or reuses) the private venv with `base` and pip-installs the bundled package into it. */
  async install(base: string): Promise<void> {
    const venv = this.privateEnvDir;
    fs.mkdirSync(path.dirname(venv), { recursive: true });
    if (!fs.existsSync(this.privatePython)) {
      this.log.info(`creating ${venv} with ${base}`);
      const created = await run(base, ['-m', 'venv', venv], { timeoutMs: 120_000 });
      this.logOutput(created);
      if (created.code !== 0) {
        throw new Error(`could not create a virtual environment with ${base}: ${lastLine(created.stderr) || `exit code ${created.code}`}` +
          (/ensurepip|venv/.test(created.stderr) ? ' (on Debian/Ubuntu: apt install python3-venv)' : ''));
      }
    }
    const target = this.installTarget();
    let attempts = pipInstallAttempts(target);
    // Wheels for another Python or platform cannot install offline: say why, and let pip try the index alone.
    const mismatch = 'wheelsDir' in target ? await this.wheelsMismatch(target.wheelsDir) : null;
    if (mismatch) {
      this.log.warn(mismatch);
      attempts = attempts.filter((args) => !args.includes('--no-index'));
    }
    let failure = '';
    for (const args of attempts) {
      this.log.info(`${this.privatePython} ${args.join(' ')}`);
      const result = await run(this.privatePython, args, { timeoutMs: 15 * 60_000, cwd: venv });
      this.logOutput(result);
      if (result.code === 0) {
        const marker: InstallMarker = { version: this.extensionVersion };
        fs.writeFileSync(path.join(venv, MARKER), JSON.stringify(marker));
        return;
      }
      failure = lastLine(result.stderr) || `exit code ${result.code}`;
    }
    throw new Error(mismatch ? `${mismatch} (pip, trying PyPI instead: ${failure})` : `pip could not install Sunwell: ${failure}`);
  }

  private async wheelsMismatch(wheelsDir: string): Promise<string | null> {
    const probe = await this.probe(this.privatePython, process.env);
    return 'error' in probe ? null : wheelsMismatch(fs.readdirSync(wheelsDir), probe);
  }

  private installTarget(): { wheelsDir: string; wheel: string } | { sourceDir: string } {
    const bundle = this.bundleDir;
    const wheelsDir = path.join(bundle, 'wheels');
    const wheel = fs.existsSync(wheelsDir) ? findSunwellWheel(fs.readdirSync(wheelsDir)) : undefined;
    if (wheel) return { wheelsDir, wheel: path.join(wheelsDir, wheel) };
    // Building from source writes next to it (egg-info, build/): build from a copy.
    const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'sunwell-src-'));
    fs.cpSync(path.join(bundle, 'pyproject.toml'), path.join(copy, 'pyproject.toml'));
    for (const extra of ['README.md', 'LICENSE']) {
      if (fs.existsSync(path.join(bundle, extra))) fs.cpSync(path.join(bundle, extra), path.join(copy, extra));
    }
    fs.cpSync(path.join(bundle, 'server', 'sunwell'), path.join(copy, 'server', 'sunwell'), {
      recursive: true, filter: (src) => !src.includes('__pycache__') && !src.endsWith('.egg-info'),
    });
    return { sourceDir: copy };
  }

  private get extensionVersion(): string {
    return String(this.context.extension.packageJSON.version ?? '0');
  }

  private readMarker(): InstallMarker | null {
    try {
      return JSON.parse(fs.readFileSync(path.join(this.privateEnvDir, MARKER), 'utf8')) as InstallMarker;
    } catch {
      return null;
    }
  }

  private logOutput(result: { stdout: string; stderr: string }): void {
    for (const line of `${result.stdout}\n${result.stderr}`.split('\n')) if (line.trim()) this.log.info(line);
  }

  private async pythonExtensionInterpreter(): Promise<string | undefined> {
    const extension = vscode.extensions.getExtension<PythonExtensionApi>('ms-python.python');
    if (!extension) return undefined;
    try {
      const api = extension.isActive ? extension.exports : await extension.activate();
      const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
      const active = api.environments.getActiveEnvironmentPath(resource);
      const resolved = await api.environments.resolveEnvironment(active);
      return resolved?.executable.uri?.fsPath ?? active.path;
    } catch (err) {
      this.log.warn(`the Python extension gave no interpreter: ${err}`);
      return undefined;
    }
  }
}

/** The part of the Python extension's API (`@vscode/python-extension`) used here. */
interface PythonExtensionApi {
  environments: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { id: string; path: string };
    resolveEnvironment(env: { id: string; path: string }): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
  };
}

function substituteWorkspace(value: string): string {
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? '';
  return value.replace(/\$\{(workspaceFolder|workspaceRoot)\}/g, folder);
}

function lastLine(text: string): string {
  return text.trim().split('\n').filter(Boolean).pop() ?? '';
}

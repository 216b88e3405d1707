#!/usr/bin/env node
// `npm run package`: sunwell-<version>.vsix with the Python package inside, so installing the .vsix is all a user
// does besides having Python 3.11+.
//
// dist/python/ is staged with the package's source (pyproject.toml + server/sunwell) and, unless
// SUNWELL_VSIX_WHEELS=0, a wheels/ folder: the package's own wheel plus the wheels of all its dependencies for
// linux-x64 and CPython 3.11-3.13, so the extension's installer (extension/src/python.ts) works offline. That makes
// the .vsix platform-specific (vsce --target linux-x64; set SUNWELL_VSIX_TARGET to build another one, or
// SUNWELL_VSIX_WHEELS=0 for a universal .vsix whose installer gets the dependencies from PyPI at install time).
// Wheels are cached in dist/wheel-cache/ between runs. vsce runs `vscode:prepublish` (the production build).
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
const stage = path.join(root, 'dist', 'python');
const cache = path.join(root, 'dist', 'wheel-cache');
const withWheels = process.env.SUNWELL_VSIX_WHEELS !== '0';
const target = process.env.SUNWELL_VSIX_TARGET ?? 'linux-x64';
const PLATFORM_TAGS = {
  'linux-x64': ['manylinux2014_x86_64', 'manylinux_2_17_x86_64', 'manylinux_2_28_x86_64', 'linux_x86_64'],
  'linux-arm64': ['manylinux2014_aarch64', 'manylinux_2_17_aarch64', 'manylinux_2_28_aarch64', 'linux_aarch64'],
  'darwin-arm64': ['macosx_11_0_arm64', 'macosx_12_0_arm64', 'macosx_14_0_arm64'],
  'darwin-x64': ['macosx_10_12_x86_64', 'macosx_10_13_x86_64', 'macosx_10_15_x86_64'],
  'win32-x64': ['win_amd64'],
};
const PYTHON_VERSIONS = ['3.11', '3.12', '3.13'];

function python() {
  if (process.env.SUNWELL_PYTHON) return process.env.SUNWELL_PYTHON;
  const venv = path.join(root, '.venv', 'bin', 'python');
  return existsSync(venv) ? venv : 'python3';
}

function run(command, args, options = {}) {
  console.log(`$ ${command} ${args.join(' ')}`);
  execFileSync(command, args, { stdio: 'inherit', cwd: root, ...options });
}

function stageSource() {
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(stage, { recursive: true });
  cpSync(path.join(root, 'pyproject.toml'), path.join(stage, 'pyproject.toml'));
  // pyproject.toml names README.md as the long description: setuptools needs the file to exist.
  const readme = path.join(root, 'README.md');
  if (existsSync(readme)) cpSync(readme, path.join(stage, 'README.md'));
  else writeFileSync(path.join(stage, 'README.md'), `# Sunwell\n\n${manifest.description}\n`);
  cpSync(path.join(root, 'server', 'sunwell'), path.join(stage, 'server', 'sunwell'), {
    recursive: true,
    filter: (src) => !/__pycache__|\.pyc$|\.egg-info/.test(src),
  });
}

function dependencies() {
  const script = 'import json, tomllib; print(json.dumps(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))';
  return JSON.parse(execFileSync(python(), ['-c', script], { cwd: root, encoding: 'utf8' }));
}

function stageWheels() {
  const tags = PLATFORM_TAGS[target];
  if (!tags) throw new Error(`SUNWELL_VSIX_TARGET=${target}: no wheel platform tags known (${Object.keys(PLATFORM_TAGS).join(', ')})`);
  mkdirSync(cache, { recursive: true });
  const wheels = path.join(stage, 'wheels');
  mkdirSync(wheels, { recursive: true });
  // The package itself, built from the staged copy (so nothing is written into server/).
  run(python(), ['-m', 'pip', 'wheel', '--disable-pip-version-check', '--no-deps', '--wheel-dir', wheels, stage]);
  rmSync(path.join(stage, 'build'), { recursive: true, force: true });
  for (const dir of readdirSync(path.join(stage, 'server'))) {
    if (dir.endsWith('.egg-info')) rmSync(path.join(stage, 'server', dir), { recursive: true, force: true });
  }
  const deps = dependencies();
  for (const version of PYTHON_VERSIONS) {
    const dest = path.join(cache, target, version);
    run(python(), ['-m', 'pip', 'download', '--disable-pip-version-check', '--quiet', '--only-binary=:all:',
      '--implementation', 'cp', '--python-version', version, ...tags.flatMap((t) => ['--platform', t]),
      '--dest', dest, ...deps]);
    for (const file of readdirSync(dest)) cpSync(path.join(dest, file), path.join(wheels, file));
  }
}

stageSource();
if (withWheels) stageWheels();
const out = `sunwell-${manifest.version}.vsix`;
const args = ['package', '--no-dependencies', '--allow-missing-repository', '--skip-license', '--readme-path', 'extension/README.md', '--out', out];
if (withWheels) args.push('--target', target);
run(path.join(root, 'node_modules', '.bin', 'vsce'), args);
console.log(`\n${out}: ${withWheels ? `${target}, Python dependencies vendored` : 'universal, Python dependencies from PyPI at install'}`);

#!/usr/bin/env node
// `npm run package`: a .vsix with the Python package inside, so installing it is all a user does besides having
// Python 3.11+.
//
//   npm run package                      the package for this machine's platform: sunwell-<version>.vsix
//   npm run package -- --target T        the package for T (linux-x64, linux-arm64, darwin-x64, darwin-arm64,
//                                        win32-x64): sunwell-T-<version>.vsix
//   npm run package:all                  all five
//   SUNWELL_VSIX_WHEELS=0 npm run package   a universal .vsix without wheels (its installer gets the dependencies
//                                        from PyPI at install time)
//
// dist/python/ is staged with the package's source (pyproject.toml + server/sunwell) and a wheels/ folder: the
// package's own wheel plus the wheels of all its dependencies for the target and each Python of
// extension/build/targets.json, fetched with `pip download --platform … --only-binary=:all:` (cached in
// dist/wheel-cache/ between runs), so the extension's installer (extension/src/python.ts) works offline. Each
// package is checked afterwards: every compiled wheel in it must be for its target (scripts/vsix_wheels.py).
// vsce runs `vscode:prepublish` (the production build).
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
const { targets: TARGETS, pythons: PYTHON_VERSIONS } = JSON.parse(readFileSync(path.join(root, 'extension', 'build', 'targets.json'), 'utf8'));
const stage = path.join(root, 'dist', 'python');
const cache = path.join(root, 'dist', 'wheel-cache');
const withWheels = process.env.SUNWELL_VSIX_WHEELS !== '0';

function hostTarget() {
  const arch = { x64: 'x64', arm64: 'arm64' }[process.arch] ?? process.arch;
  return `${process.platform}-${arch}`;
}

function parseArgs(argv) {
  const all = argv.includes('--all');
  const at = argv.indexOf('--target');
  const explicit = at >= 0 ? argv[at + 1] : process.env.SUNWELL_VSIX_TARGET;
  const targets = all ? Object.keys(TARGETS) : [explicit ?? hostTarget()];
  for (const target of targets) {
    if (!TARGETS[target]) throw new Error(`--target ${target}: not one of ${Object.keys(TARGETS).join(', ')}`);
  }
  return { targets, named: all || explicit !== undefined };
}

function python() {
  if (process.env.SUNWELL_PYTHON) return process.env.SUNWELL_PYTHON;
  const venv = path.join(root, '.venv', process.platform === 'win32' ? 'Scripts' : 'bin', 'python');
  return existsSync(venv) ? venv : 'python3';
}

function run(command, args, options = {}) {
  console.log(`$ ${command} ${args.map((a) => (a.length > 80 ? `${a.slice(0, 77)}...` : a)).join(' ')}`);
  execFileSync(command, args, { stdio: 'inherit', cwd: root, ...options });
}

function stageSource() {
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(stage, { recursive: true });
  cpSync(path.join(root, 'pyproject.toml'), path.join(stage, 'pyproject.toml'));
  // pyproject.toml names README.md as the long description (it must exist); setuptools puts LICENSE into the wheel.
  for (const file of ['README.md', 'LICENSE']) {
    if (existsSync(path.join(root, file))) cpSync(path.join(root, file), path.join(stage, file));
  }
  if (!existsSync(path.join(stage, 'README.md'))) writeFileSync(path.join(stage, 'README.md'), `# Sunwell\n\n${manifest.description}\n`);
  cpSync(path.join(root, 'server', 'sunwell'), path.join(stage, 'server', 'sunwell'), {
    recursive: true,
    filter: (src) => !/__pycache__|\.pyc$|\.egg-info/.test(src),
  });
}

/** The package's own wheel, built once from the staged copy (so nothing is written into server/). */
function buildOwnWheel() {
  const out = path.join(root, 'dist', 'own-wheel');
  rmSync(out, { recursive: true, force: true });
  run(python(), ['-m', 'pip', 'wheel', '--disable-pip-version-check', '--quiet', '--no-deps', '--wheel-dir', out, stage]);
  rmSync(path.join(stage, 'build'), { recursive: true, force: true });
  for (const dir of readdirSync(path.join(stage, 'server'))) {
    if (dir.endsWith('.egg-info')) rmSync(path.join(stage, 'server', dir), { recursive: true, force: true });
  }
  return out;
}

function dependencies() {
  const script = 'import json, tomllib; print(json.dumps(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))';
  return JSON.parse(execFileSync(python(), ['-c', script], { cwd: root, encoding: 'utf8' }));
}

function stageWheels(target, ownWheel, deps) {
  const wheels = path.join(stage, 'wheels');
  rmSync(wheels, { recursive: true, force: true });
  mkdirSync(wheels, { recursive: true });
  for (const file of readdirSync(ownWheel)) cpSync(path.join(ownWheel, file), path.join(wheels, file));
  for (const version of PYTHON_VERSIONS) {
    const dest = path.join(cache, target, version);
    mkdirSync(dest, { recursive: true });
    run(python(), ['-m', 'pip', 'download', '--disable-pip-version-check', '--quiet', '--only-binary=:all:',
      '--implementation', 'cp', '--python-version', version, ...TARGETS[target].pip.flatMap((t) => ['--platform', t]),
      '--dest', dest, ...deps]);
    for (const file of readdirSync(dest)) cpSync(path.join(dest, file), path.join(wheels, file));
  }
}

const { targets, named } = parseArgs(process.argv.slice(2));
stageSource();
const vsce = path.join(root, 'node_modules', '.bin', 'vsce');
// The README's screenshots (extension/media/screenshots, not in the .vsix) are shown from the repository.
const images = `${manifest.repository?.url?.replace(/\.git$/, '') ?? ''}/raw/HEAD/extension/`;
const common = ['package', '--no-dependencies', '--readme-path', 'extension/README.md', '--baseImagesUrl', images];
if (!withWheels) {
  const out = `sunwell-${manifest.version}.vsix`;
  run(vsce, [...common, '--out', out]);
  console.log(`\n${out}: universal, Python dependencies from PyPI at install`);
} else {
  const ownWheel = buildOwnWheel();
  const deps = dependencies();
  for (const target of targets) {
    stageWheels(target, ownWheel, deps);
    const out = named ? `sunwell-${target}-${manifest.version}.vsix` : `sunwell-${manifest.version}.vsix`;
    run(vsce, [...common, '--target', target, '--out', out]);
    run(python(), [path.join(root, 'scripts', 'vsix_wheels.py'), out, '--target', target]);
    console.log(`\n${out}: ${target}, Python dependencies vendored for CPython ${PYTHON_VERSIONS.join(', ')}`);
  }
}

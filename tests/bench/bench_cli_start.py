"""Benchmark of the command line's start: `sunwell --help`, `sunwell --version`, `sunwell version` and
`sunwell sessions list`, against `python -c pass` (the interpreter alone) and `python -m pip --version` (a large CLI
that imports lazily), side by side in one run.

    python tests/bench/bench_cli_start.py [--runs 15] [--sessions 20] [--check] [--imports]

Every command is a whole process, timed from its spawn to its exit (wall) with its CPU time (user + system, the
kernel's accounting of the reaped child: less disturbed by a busy machine). Each round runs every command once, in
an order that turns over from round to round, so a drift of the machine's speed falls on all of them alike; one
warm-up round (bytecode written, files cached) is not counted. Bytecode is cached in a temp dir for all alike, as in
an installed CLI. `sessions list` reads a store of --sessions sessions, made beforehand by real `sunwell run` turns
against the scripted provider (tests/fake_provider.py). A ratio is the median of the per-round ratios.

Target (issue 41, item 3): each sunwell command <= 1.5x pip's start, in wall time. With --check the exit code is 1
when one misses it. --imports lists, for information, the heaviest imports of each sunwell command
(`python -X importtime`, one run).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from fake_provider import FakeProvider, Reply

TARGET = 1.5
PYTHON = sys.executable
BASELINES = {"python -c pass": ["-c", "pass"], "pip --version": ["-m", "pip", "--version"]}
SUNWELL = {"sunwell --help": ["--help"], "sunwell --version": ["--version"], "sunwell version": ["version"],
           "sunwell sessions list": ["sessions", "list"]}


def environment(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "ANTHROPIC_", "SUNWELL_")) and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(ROOT / "server"), XDG_CONFIG_HOME=str(tmp / "config"),
               SUNWELL_DATA_DIR=str(tmp / "data"), PYTHONPYCACHEPREFIX=str(tmp / "pycache"))
    return env


def make_sessions(count: int, env: dict[str, str], workspace: Path) -> None:
    """`count` stored sessions, each one real turn of `sunwell run` against the scripted provider."""
    with FakeProvider() as fake:
        fake.script(*(Reply(text=f"answer {n}") for n in range(count)))
        run_env = {**env, "OPENAI_BASE_URL": f"{fake.url}/v1", "OPENAI_API_KEY": "sk-bench"}
        for n in range(count):
            subprocess.run([PYTHON, "-m", "sunwell", "run", f"question {n}", "--model", "openai:gpt-4o"],
                           env=run_env, cwd=workspace, check=True, capture_output=True)


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall ms, cpu ms) of one whole process."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = (time.perf_counter() - started) * 1000
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}")
    return wall, (usage.ru_utime + usage.ru_stime) * 1000


def measure(runs: int, env: dict[str, str], cwd: Path) -> dict[str, dict[str, list[float]]]:
    commands = {name: [PYTHON, *args] for name, args in BASELINES.items()}
    commands |= {name: [PYTHON, "-m", "sunwell", *args] for name, args in SUNWELL.items()}
    names = list(commands)
    times: dict[str, dict[str, list[float]]] = {name: {"wall": [], "cpu": []} for name in names}
    for round_ in range(runs + 1):
        shift = round_ % len(names)
        order = names[shift:] + names[:shift]
        for name in order if round_ % 2 else order[::-1]:
            wall, cpu = timed(commands[name], env, cwd)
            if round_:  # the first round warms the caches
                times[name]["wall"].append(wall)
                times[name]["cpu"].append(cpu)
    return times


def ratio(times, name: str, base: str, kind: str) -> float:
    return statistics.median(a / b for a, b in zip(times[name][kind], times[base][kind], strict=True))


def report(times, runs: int) -> bool:
    print(f"{runs} rounds, every command once a round; load average {os.getloadavg()[0]:.1f}")
    print(f"{'command':<24} {'wall median':>11} {'min..max':>15} {'cpu':>8} {'/ pass':>7} {'/ pip':>7} "
          f"{'cpu / pip':>9}")
    met = True
    for name, values in times.items():
        wall, cpu = values["wall"], values["cpu"]
        spread = f"{min(wall):.0f}..{max(wall):.0f} ms"
        line = (f"{name:<24} {statistics.median(wall):>8.0f} ms {spread:>15} {statistics.median(cpu):>5.0f} ms "
                f"{ratio(times, name, 'python -c pass', 'wall'):>6.2f}x")
        if name.startswith("sunwell"):
            to_pip = ratio(times, name, "pip --version", "wall")
            met &= to_pip <= TARGET
            line += f" {to_pip:>6.2f}x {ratio(times, name, 'pip --version', 'cpu'):>8.2f}x"
            line += "" if to_pip <= TARGET else f"  (target <= {TARGET}x: missed)"
        print(line)
    print(f"target: every sunwell command <= {TARGET}x pip's start (wall, median of the per-round ratios): "
          f"{'met' if met else 'MISSED'}")
    return met


def heaviest_imports(env: dict[str, str], cwd: Path, top: int = 6) -> None:
    for name, args in SUNWELL.items():
        lines = subprocess.run([PYTHON, "-X", "importtime", "-m", "sunwell", *args], env=env, cwd=cwd,
                               capture_output=True, text=True, check=True).stderr.splitlines()
        rows = []
        for line in lines:
            if line.startswith("import time:") and "|" in line and "cumulative" not in line:
                _, cumulative, module = line.removeprefix("import time:").split("|")
                if module.startswith(" ") and not module.startswith("  "):  # imported by the command itself
                    rows.append((int(cumulative), module.strip()))
        print(f"{name}: " + ", ".join(f"{module} {us / 1000:.0f} ms" for us, module in sorted(rows)[::-1][:top]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="counted rounds (default 15)")
    parser.add_argument("--sessions", type=int, default=20, help="sessions in the store `sessions list` reads")
    parser.add_argument("--check", action="store_true", help=f"exit 1 when a command is above {TARGET}x pip")
    parser.add_argument("--imports", action="store_true", help="also list each command's heaviest imports")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-cli-start-") as name:
        tmp = Path(name)
        workspace = tmp / "workspace"
        workspace.mkdir()
        env = environment(tmp)
        make_sessions(args.sessions, env, workspace)
        met = report(measure(args.runs, env, workspace), args.runs)
        if args.imports:
            heaviest_imports(env, workspace)
    return 1 if args.check and not met else 0


if __name__ == "__main__":
    sys.exit(main())

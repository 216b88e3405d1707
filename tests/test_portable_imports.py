"""Every module of the package imports where the Linux-only modules do not exist (Windows; macOS has most of them,
but not all): a module that needs one imports it where it is used, guarded, so a Windows import error shows here.

The package is imported in a subprocess whose `import` refuses those modules to Sunwell's own code only: the
standard library imports them too on Linux (shutil tries pwd, getpass termios), and does so guarded already."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from conftest import SERVER

LINUX_ONLY = ("fcntl", "termios", "resource", "pty", "tty", "grp", "pwd", "readline", "syslog", "posix",
              "_posixsubprocess", "_posixshmem")  # fmt: skip
POSIX_ONLY_OS = ("O_NOFOLLOW", "O_DIRECTORY", "O_CLOEXEC", "O_NONBLOCK", "killpg", "getuid", "geteuid", "getxattr",
                 "setsid", "getpgid", "fork", "pipe2")  # fmt: skip

PROBE = textwrap.dedent("""
    import builtins, importlib, json, os, pkgutil, sys, traceback

    LINUX_ONLY = set(sys.argv[1].split(","))
    real_import = builtins.__import__

    # A wrapper of `import`, not only a sys.meta_path finder: a module the standard library imported already is in
    # sys.modules, where a finder is never asked.
    def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
        importer = (globals or {}).get("__name__", "")
        if level == 0 and name.partition(".")[0] in LINUX_ONLY and importer.partition(".")[0] == "sunwell":
            raise ModuleNotFoundError(f"No module named {name!r} (Linux-only, imported by {importer})", name=name)
        return real_import(name, globals, locals, fromlist, level)

    builtins.__import__ = guarded_import
    # os attributes Windows lacks, read at import time by a module of ours (module-level flags), not by the
    # standard library's modules already loaded
    for name in sys.argv[2].split(","):
        if hasattr(os, name):
            delattr(os, name)
    import sunwell
    failed = {}
    names = ["sunwell"] + [m.name for m in pkgutil.walk_packages(sunwell.__path__, "sunwell.")]
    for name in names:
        if name.endswith(".__main__"):
            continue  # runs a command line
        try:
            importlib.import_module(name)
        except BaseException as exc:
            failed[name] = traceback.format_exception_only(exc)[-1].strip()
    print(json.dumps({"imported": len(names) - len(failed), "failed": failed}))
""")


def test_every_module_imports_without_the_linux_only_modules():
    done = subprocess.run([sys.executable, "-c", PROBE, ",".join(LINUX_ONLY), ",".join(POSIX_ONLY_OS)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(SERVER)}, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    import json

    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["failed"] == {}
    assert result["imported"] > 150  # the walk found the package, not an empty folder

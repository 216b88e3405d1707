"""The `sunwell` command (docs/cli.md): `main` parses and dispatches, one module per group of commands."""

from sunwell.cli.main import main

__all__ = ["main"]

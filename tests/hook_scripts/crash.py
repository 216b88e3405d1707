"""A hook with a bug: it raises (exit 1, a traceback on stderr)."""
import sys

sys.stdin.read()
raise RuntimeError("the hook broke")

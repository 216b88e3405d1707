"""post_tool: prints 10 MB."""
import sys

sys.stdin.read()
chunk = "x" * 1023 + "\n"
for _ in range(10 * 1024):
    sys.stdout.write(chunk)

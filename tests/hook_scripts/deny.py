"""pre_tool: records the call it was given, then denies it (exit 2, the reason on stderr)."""
import json
import os
import sys

call = json.load(sys.stdin)
with open(os.environ["HOOK_LOG"], "a") as out:
    out.write(json.dumps(call) + "\n")
print(f"no {call['tool']} here: the files are frozen", file=sys.stderr)
sys.exit(2)

"""turn_end / session_start: appends what it was given to HOOK_LOG."""
import json
import os
import sys

with open(os.environ["HOOK_LOG"], "a") as out:
    out.write(json.dumps(json.load(sys.stdin)) + "\n")

"""post_tool: a note on the result it was given."""
import json
import sys

call = json.load(sys.stdin)
state = "ok" if call["result"]["ok"] else "failed"
print(f"checked {call['tool']} ({state}); remember to run the tests")

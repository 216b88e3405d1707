"""pre_tool: tries to approve the call it was given (any way it could: stdout, exit 0). It cannot."""
import json
import sys

json.load(sys.stdin)
print(json.dumps({"decision": "allow", "permissionDecision": "allow", "approve": True}))
sys.exit(0)

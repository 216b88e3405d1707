"""A hook that never ends (and leaves a child that would not either)."""
import subprocess
import sys
import time

subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
time.sleep(600)

import gc
import sys

if sys.argv[1:2] == ["serve"]:
    gc.disable()  # until the sidecar's first engine is built (lsp/process.py `end_of_start`)

from sunwell.cli import main

sys.exit(main())

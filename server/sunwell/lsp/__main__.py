"""`python -m sunwell.lsp`: the sidecar on stdio (what `sunwell serve` runs)."""

import gc
import sys

gc.disable()  # until the first engine is built (lsp/process.py `end_of_start`)

from sunwell.lsp.server import main

sys.exit(main())

"""`python -m sunwell.lsp`: the sidecar on stdio (what `sunwell serve` runs)."""

import sys

from sunwell.lsp.server import main

sys.exit(main())

import sys

from sunwell.cli import main

sys.exit(main())

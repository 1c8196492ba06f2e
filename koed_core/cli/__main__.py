"""``python -m koed_core.cli``: the ``koed`` command without the console script."""

import sys

from koed_core.cli import main

sys.exit(main())

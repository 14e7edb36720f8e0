"""``python -m bondgraph``: the command line (see :mod:`bondgraph.cli`)."""

import sys

from .cli import main

sys.exit(main())

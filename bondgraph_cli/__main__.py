"""``python -m bondgraph_cli``: the command line (see :mod:`bondgraph_cli`)."""

import sys

from . import main

sys.exit(main())

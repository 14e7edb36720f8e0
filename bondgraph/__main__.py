"""``python -m bondgraph``: the command line of the application layer
(:mod:`bondgraph_cli`; an entry point, never imported by the package itself)."""

import sys

from bondgraph_cli import main

sys.exit(main())

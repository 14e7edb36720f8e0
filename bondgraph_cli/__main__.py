"""``python -m bondgraph_cli``: the command line (see :mod:`bondgraph_cli`)."""

from . import console

console()

"""``python -m bondgraph``: the command line of the application layer
(:mod:`bondgraph_cli`; an entry point, never imported by the package itself)."""

from bondgraph_cli import console

console()

"""Export an assembled model as an FMI 2.0 FMU (model exchange and co-simulation):
standalone C, compiled for this platform, no Python at run time.

- :func:`export_fmu`: the FMU of a :class:`~bondgraph.StateSpaceModel` (the element
  library's :func:`elements.export_fmu` does it for a mechanism, by joint names).
- :class:`ExportedFMU`: what was written (engine, variables, binary).

See ``docs/fmu.md``.
"""

from ._export import CS_SOLVERS, ExportedFMU, export_fmu

__all__ = ["export_fmu", "ExportedFMU", "CS_SOLVERS"]

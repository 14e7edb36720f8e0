"""Old module names of the library, kept for one version as deprecated aliases.

The library's modules moved into rooms (sub-packages by concern: kernels, parts, joints,
running, analysis, files, drawing, export) and its component library into the core
(``bondgraph.components``). Importing a module by its old name gives the module under
its new name (the same object) with a ``DeprecationWarning`` naming the new one; the
public names of ``elements`` and of ``elements.joints`` did not move.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

__all__ = ["MOVED"]

MOVED: dict[str, str] = {
    "elements._blocks": "elements.kernels.blocks",
    "elements._compiled": "elements.kernels.compiled",
    "elements._compiled_c": "elements.kernels.compiled_c",
    "elements._kernels": "elements.kernels.geometry",
    "elements._tree_kernels": "elements.kernels.tree",
    "elements.rigid_body": "elements.parts.rigid_body",
    "elements.forces": "elements.parts.forces",
    "elements.couplings": "elements.parts.couplings",
    "elements.joint_axis": "elements.joints.axis",
    "elements.joint_blocks": "elements.joints.blocks",
    "elements.joint_contract": "elements.joints.contract",
    "elements.chain_joint": "elements.joints.chain",
    "elements.joint_chains": "elements.files.joint_chains",
    "elements.closure": "elements.running.closure",
    "elements.hybrid": "elements.running.hybrid",
    "elements.runner": "elements.running.runner",
    "elements.dynamics": "elements.analysis.dynamics",
    "elements.fast_dynamics": "elements.analysis.fast_dynamics",
    "elements.linearization": "elements.analysis.linearization",
    "elements.modes": "elements.analysis.modes",
    "elements.energy_check": "elements.analysis.energy_check",
    "elements.file_tables": "elements.files.tables",
    "elements.modelfile": "elements.files.modelfile",
    "elements.modelfile_robot": "elements.files.modelfile_robot",
    "elements.urdf": "elements.files.urdf",
    "elements.mjcf": "elements.files.mjcf",
    "elements.robot_spec": "elements.files.robot_spec",
    "elements.robot_tree": "elements.files.robot_tree",
    "elements.motion": "elements.drawing.motion",
    "elements.scene": "elements.drawing.scene",
    "elements.animation": "elements.drawing.animation",
    "elements.video": "elements.drawing.video",
    "elements.result_display": "elements.drawing.result_display",
    "elements.fmu": "elements.export.fmu",
    "elements.component_library": "bondgraph.components",
    "elements.component_library.base": "bondgraph.components.base",
    "elements.component_library.electrical": "bondgraph.components.electrical",
    "elements.component_library.mechanics": "bondgraph.components.mechanics",
    "elements.component_library.hydraulic": "bondgraph.components.hydraulic",
    "elements.component_library.thermal": "bondgraph.components.thermal",
}
"""Old module name -> new module name."""


class _Aliases(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old name of :data:`MOVED` and loads it as the module at its new name."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        new = MOVED[spec.name]
        warnings.warn(f"{spec.name} has moved to {new}; import it from there (the old "
                      f"name goes in the next version)", DeprecationWarning, stacklevel=3)
        return importlib.import_module(new)

    def exec_module(self, module):
        pass                      # (the module at its new name is already executed)


if not any(isinstance(f, _Aliases) for f in sys.meta_path):
    # first: an old package's submodule (elements.component_library.base) would otherwise
    # be found a second time in the moved package's folder, as another module object
    sys.meta_path.insert(0, _Aliases())

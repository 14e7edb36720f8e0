"""The library's kernels: the geometry of joints and loads (G, Phi and their rates), Jacobian blocks and their compiled programs, the joint-space recursions, and their C text for an exported FMU."""

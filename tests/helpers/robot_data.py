"""Where the test extra's ``example-robot-data`` keeps its robot descriptions (None where
it is not installed: the tests that need them skip, saying so)."""

from __future__ import annotations

import os


def robots_dir() -> str | None:
    """The folder of example-robot-data's robots, or None."""
    import importlib.metadata as md
    try:
        dist = md.distribution("example-robot-data")
    except md.PackageNotFoundError:
        return None
    path = str(dist.locate_file("cmeel.prefix/share/example-robot-data/robots"))
    return path if os.path.isdir(path) else None


def robot_file(rel: str) -> str | None:
    """The file ``rel`` (e.g. ``panda_description/urdf/panda.urdf``) under it, or None."""
    root = robots_dir()
    path = os.path.join(root, rel) if root else None
    return path if path and os.path.isfile(path) else None

"""Joints: the contract, the library's kinds, the blocks they are made of, the
coordinate ports and their attachments.

The public names of the former module ``elements.joints`` are here too
(``from elements.joints.kinds import RevoluteJoint`` keeps working).
"""

from elements.joints.kinds import *  # noqa: F401,F403
from elements.joints.kinds import __all__  # noqa: F401

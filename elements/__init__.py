"""The spatial multibody element library, built on the :mod:`bondgraph` core.

Bodies and loads
    RigidBody, Inertia, Ground, PointForce, BodyMoment, PointVelocityMTF
Joints (the contract, the registry, the library's kinds)
    Joint, JointAxis, register_joint, joint_type, joint_types,
    RevoluteJoint, PrismaticJoint, CylindricalJoint, ScrewJoint, UniversalJoint,
    GimbalJoint (three angles about axes meeting at a point), PlanarJoint, SphericalJoint, FixedJoint, FreeJoint (6 DOF: a free body as a joint),
    ChainJoint, ChainAxis (any chain of revolutes and slides through massless links),
    AxisSpring, AxisDamper, AxisActuator, AxisRotor, AxisLimit, AxisFriction
Couplings between joints (gears, racks, mimic joints)
    JointCoupling
Assembly and results
    Mechanism, MechanismModel, AssemblyError, MechanismResult, BodyResult, JointResult,
    EnergyLedger, Switch (a mode change of a run with stops or friction)
Dynamics at a state
    forward_kinematics, direct_dynamics, inverse_dynamics, joint_accelerations,
    prescribed_motion, PrescribedMotionResult
Dynamics at many states, fast (joint coordinates, compiled, batched)
    FastDynamics
Linear models (independent joint coordinates) and equilibria
    linearize_mechanism, mechanism_equilibrium, MechanismEquilibrium
Modes (joint-coordinate shapes; the 3D page of mode shapes)
    mode_shapes, ModeShape, animate_modes
FMI: a mechanism as an FMU (model exchange and co-simulation, standalone C)
    export_mechanism_fmu
Robot descriptions
    load_urdf, loads_urdf, URDFError, load_mjcf, loads_mjcf, from_mujoco,
    mujoco_coordinates, MJCFError, RobotTree, ImportReport, Frame, RobotImportWarning
Contact geometry (collision shapes, contacts of two shapes, the broad phase)
    elements.contact: Plane, Sphere, Capsule, Box, Cylinder, ConvexMesh, collide,
    Contacts, CollisionWorld
Multi-domain components by name (electrical, 1-D mechanics, hydraulic, thermal)
    component, components, define_component, register_component, ComponentType,
    ComponentParameter, ComponentPort
Canonical mechanisms
    elements.models
Seeing the motion
    animate (3D page, HTML), animate_video (GIF or MP4), Shape
Parameter studies (sweeps, Monte Carlo; in-process or on Dask)
    Study, Grid, MonteCarlo, Uniform, Normal, LogNormal, Choice, Output,
    ParametricModel, StudyResult, load_study, read_results, plot_study
"""

from __future__ import annotations

from . import contact, models
from .component_library import (
    ComponentParameter, ComponentPort, ComponentType, component, components,
    define_component, register_component,
)
from .animation import Shape, animate
from .forces import BodyMoment, Load, PointForce
from .couplings import JointCoupling
from .fast_dynamics import FastDynamics
from .chain_joint import ChainAxis, ChainJoint
from .contact import (
    Box, Capsule, CollisionWorld, Contacts, ConvexMesh, Cylinder, Plane, Sphere, collide,
)
from .dynamics import (
    PrescribedMotionResult, direct_dynamics, forward_kinematics, inverse_dynamics,
    joint_accelerations, prescribed_motion,
)
from .joints import (
    AxisActuator, AxisDamper, AxisFriction, AxisLimit, AxisRotor, AxisSpring, CylindricalJoint, FixedJoint, FreeJoint,
    Joint,
    JointAxis, PlanarJoint, PrismaticJoint, RevoluteJoint, ScrewJoint, SphericalJoint,
    UniversalJoint, GimbalJoint, joint_type, joint_types, register_joint,
)
from .hybrid import Switch
from .fmu import export_mechanism_fmu
from .linearization import MechanismEquilibrium, linearize_mechanism, mechanism_equilibrium
from .mechanism import AssemblyError, Mechanism, MechanismModel
from .modes import ModeShape, animate_modes, mode_shapes
from .mjcf import MJCFError, from_mujoco, load_mjcf, loads_mjcf, mujoco_coordinates
from .results import BodyResult, EnergyLedger, JointResult, MechanismResult
from .robot_tree import Frame, ImportReport, RobotImportWarning, RobotTree
from .rigid_body import Ground, Inertia, PointVelocityMTF, RigidBody
from .study import (
    Choice, Grid, LogNormal, MonteCarlo, Normal, Output, ParametricModel, Study,
    StudyResult, Uniform, load_study, plot_study, read_results,
)
from .urdf import URDFError, load_urdf, loads_urdf
from .video import animate_video

__all__ = [
    "RigidBody", "Inertia", "Ground", "PointForce", "BodyMoment", "Load", "PointVelocityMTF",
    "RevoluteJoint", "PrismaticJoint", "SphericalJoint", "FixedJoint", "FreeJoint", "Joint",
    "CylindricalJoint", "ScrewJoint", "UniversalJoint", "GimbalJoint", "PlanarJoint",
    "ChainJoint", "ChainAxis",
    "JointAxis",
    "register_joint", "joint_type", "joint_types", "AxisSpring", "AxisDamper", "AxisActuator", "AxisRotor", "AxisLimit", "AxisFriction", "JointCoupling", "Switch", "Mechanism", "MechanismModel",
    "AssemblyError", "MechanismResult", "BodyResult", "JointResult", "EnergyLedger", "models",
    "animate", "animate_video", "Shape",
    "load_urdf", "loads_urdf", "URDFError", "RobotTree", "ImportReport", "Frame",
    "RobotImportWarning", "load_mjcf", "loads_mjcf", "from_mujoco", "mujoco_coordinates",
    "MJCFError", "FastDynamics", "forward_kinematics", "direct_dynamics", "inverse_dynamics",
    "joint_accelerations", "prescribed_motion", "PrescribedMotionResult",
    "linearize_mechanism", "mechanism_equilibrium", "MechanismEquilibrium",
    "mode_shapes", "ModeShape", "animate_modes", "export_mechanism_fmu",
]
__all__ += [
    "component", "components", "define_component", "register_component", "ComponentType",
    "ComponentParameter", "ComponentPort",
]
__all__ += [
    "contact", "Plane", "Sphere", "Capsule", "Box", "Cylinder", "ConvexMesh", "collide",
    "Contacts", "CollisionWorld",
]
__all__ += [
    "Study", "Grid", "MonteCarlo", "Uniform", "Normal", "LogNormal", "Choice", "Output",
    "ParametricModel", "StudyResult", "load_study", "read_results", "plot_study",
]

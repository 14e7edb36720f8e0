"""The spatial multibody element library, built on the :mod:`bondgraph` core.

Bodies and loads
    RigidBody, Inertia, Ground, PointForce, BodyMoment, PointVelocityMTF
Joints (the contract, the registry, the library's kinds)
    Joint, JointAxis, AxisMotion (a coordinate as a rotation or a translation), register_joint, joint_type, joint_types,
    RevoluteJoint, PrismaticJoint, CylindricalJoint, ScrewJoint, UniversalJoint,
    GimbalJoint (three angles about axes meeting at a point), PlanarJoint,
    TranslationJoint (two or three slides), SphericalJoint, FixedJoint,
    FreeJoint (6 DOF: a free body as a joint),
    ChainJoint, ChainAxis (any chain of revolutes and slides through massless links),
    AxisSpring, AxisDamper, AxisActuator, AxisRotor, AxisLimit, AxisFriction
Couplings between joints (gears, racks, mimic joints)
    JointCoupling
Assembly and results
    Mechanism, MechanismModel, AssemblyError, MechanismResult, BodyResult, JointResult,
    EnergyLedger, Switch, SwitchKind, Hold (a mode change of a run with stops or friction),
    FrictionLoopError (joint friction following its load found no sliding state),
    BuildIndex, Attachment, Kind (what a build created, by handle: MechanismModel.index)
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
    elements.contact: Plane, Sphere, Capsule, Box, Cylinder, ConvexMesh, Ellipsoid, collide,
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

from elements import _moved, contact, models  # noqa: F401  (_moved: the old module names)
from bondgraph.components import (
    ComponentParameter, ComponentPort, ComponentType, component, components,
    define_component, register_component,
)
from elements.drawing.animation import Shape, animate
from elements.parts.forces import BodyMoment, Load, PointForce
from elements.parts.couplings import JointCoupling
from elements.analysis.fast_dynamics import FastDynamics
from elements.joints.chain import ChainAxis, ChainJoint
from elements.contact import (
    Box, Capsule, CollisionWorld, Contacts, ConvexMesh, Cylinder, Ellipsoid, Plane, Sphere,
    collide,
)
from elements.analysis.dynamics import (
    PrescribedMotionResult, direct_dynamics, forward_kinematics, inverse_dynamics,
    joint_accelerations, prescribed_motion,
)
from elements.joints.kinds import (
    AxisActuator, AxisDamper, AxisFriction, AxisLimit, AxisMotion, AxisRotor, AxisSpring, CylindricalJoint, FixedJoint, FreeJoint,
    Joint,
    JointAxis, PlanarJoint, PrismaticJoint, RevoluteJoint, ScrewJoint, SphericalJoint,
    TranslationJoint, UniversalJoint, GimbalJoint, joint_type, joint_types, register_joint,
)
from elements.running.switch import Hold, Switch, SwitchKind
from elements.running.joint_load import FrictionLoopError
from elements.build_index import Attachment, BuildIndex, Kind
from elements.export.fmu import export_mechanism_fmu
from elements.analysis.linearization import MechanismEquilibrium, linearize_mechanism, mechanism_equilibrium
from elements.mechanism import AssemblyError, Mechanism, MechanismModel
from elements.analysis.modes import ModeShape, animate_modes, mode_shapes
from elements.files.mjcf import MJCFError, from_mujoco, load_mjcf, loads_mjcf, mujoco_coordinates
from elements.results import BodyResult, EnergyLedger, JointResult, MechanismResult
from elements.files.robot_tree import Frame, ImportReport, RobotImportWarning, RobotTree
from elements.parts.rigid_body import Ground, Inertia, PointVelocityMTF, RigidBody
from elements.study import (
    Choice, Grid, LogNormal, MonteCarlo, Normal, Output, ParametricModel, Study,
    StudyResult, Uniform, load_study, plot_study, read_results,
)
from elements.files.urdf import URDFError, load_urdf, loads_urdf
from elements.drawing.video import animate_video

__all__ = [
    "RigidBody", "Inertia", "Ground", "PointForce", "BodyMoment", "Load", "PointVelocityMTF",
    "RevoluteJoint", "PrismaticJoint", "SphericalJoint", "FixedJoint", "FreeJoint", "Joint",
    "CylindricalJoint", "ScrewJoint", "UniversalJoint", "GimbalJoint", "PlanarJoint",
    "TranslationJoint", "ChainJoint", "ChainAxis",
    "JointAxis",
    "register_joint", "joint_type", "joint_types", "AxisSpring", "AxisDamper", "AxisActuator", "AxisRotor", "AxisLimit", "AxisFriction", "AxisMotion", "JointCoupling", "Switch", "SwitchKind", "Hold", "FrictionLoopError", "BuildIndex", "Attachment", "Kind", "Mechanism", "MechanismModel",
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
    "contact", "Plane", "Sphere", "Capsule", "Box", "Cylinder", "ConvexMesh", "Ellipsoid", "collide",
    "Contacts", "CollisionWorld",
]
__all__ += [
    "Study", "Grid", "MonteCarlo", "Uniform", "Normal", "LogNormal", "Choice", "Output",
    "ParametricModel", "StudyResult", "load_study", "read_results", "plot_study",
]

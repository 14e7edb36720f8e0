"""Draw each element's bond graph for the documentation: docs/img/<name>.svg; and the
architecture picture, docs/img/architecture.svg from docs/img/architecture.dot.

Run: python docs/make_figures.py   (needs graphviz's dot; the SVGs are committed)
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from bondgraph import (  # noqa: E402
    C, EJS, GY, I, MTF, TF, BondGraph, OneJunction, R, Se, Sf, UnknownEffort, ZeroJunction,
    assign_causality, models, render,
)
from elements import (  # noqa: E402
    CylindricalJoint, FreeJoint, Inertia, Mechanism, PlanarJoint, PrismaticJoint, RevoluteJoint,
    RigidBody, ScrewJoint, SphericalJoint, UniversalJoint,
)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "img")


def one_port(el, tail_is_el: bool):
    bg = BondGraph(el.kind)
    bg.add(el, OneJunction("1", dim=el.dim))
    if tail_is_el:
        bg.connect(el.name, "1")
    else:
        bg.connect("1", el.name)
    return bg


def two_port(el):
    bg = BondGraph(el.kind)
    bg.add(OneJunction("a"), el, OneJunction("b"))
    bg.connect("a", el.name)
    bg.connect(el.name, "b")
    return bg


def main() -> None:
    os.makedirs(OUT, exist_ok=True)
    figures = {
        "Se": one_port(Se("Se", 1.0), True),
        "Sf": one_port(Sf("Sf", 1.0), True),
        "I": one_port(I("I", 2.0), False),
        "C": one_port(C("C", 5.0), False),
        "R": one_port(R("R", 0.5), False),
        "TF": two_port(TF("TF", 2.0)),
        "GY": two_port(GY("GY", 0.1)),
        "MTF": two_port(MTF("MTF", lambda q: np.eye(1) * q, modulus_rate=lambda q, qd:
                            np.eye(1) * qd, depends_on=("q",), shape=(1, 1))),
        "two_masses_rigid": assign_causality(models.two_masses_rigid(1.0, 3.0, 2.0)),
        "cartesian_pendulum": assign_causality(models.cartesian_pendulum(2.0, 1.5, 9.81)),
    }
    ejs = BondGraph("EJS")
    ejs.add(OneJunction("w", dim=3), I("J", [1.0, 2.0, 3.0], dim=3), EJS("EJS", momentum="J"))
    ejs.connect("w", "J")
    ejs.connect("w", "EJS")
    figures["EJS"] = ejs
    zero = BondGraph("0")
    zero.add(ZeroJunction("0"), Se("e", 1.0), I("m1", 1.0), I("m2", 1.0))
    zero.connect("e", "0")
    zero.connect("0", "m1")
    zero.connect("0", "m2")
    figures["0"] = zero

    def mech(name, joint):
        m = Mechanism(name, gravity=(0, 0, -9.81))
        a = m.add_body(RigidBody("a", 1.0, Inertia.principal(0.01, 0.01, 0.01)))
        b = m.add_body(RigidBody("b", 1.0, Inertia.principal(0.01, 0.01, 0.01)))
        m.add_joint(RevoluteJoint("J0", m.ground, a, axis=(0, 0, 1)))
        m.add_joint(joint(a, b))
        return assign_causality(m.build())

    body = Mechanism("rigid_body", gravity=(0, 0, -9.81))
    body.add_body(RigidBody("B", 1.0, Inertia.principal(0.01, 0.02, 0.03)))
    figures["rigid_body"] = body.build()
    figures["revolute"] = mech("revolute", lambda a, b: RevoluteJoint(
        "J", a, b, parent_point=(0.1, 0, 0), child_point=(0, 0, 0.1), axis=(0, 1, 0),
        spring=1.0))
    figures["prismatic"] = mech("prismatic", lambda a, b: PrismaticJoint(
        "J", a, b, parent_point=(0, 0, -0.05), axis=(0, 0, 1), spring=500.0))
    figures["spherical"] = mech("spherical", lambda a, b: SphericalJoint(
        "J", a, b, parent_point=(0.1, 0, 0), child_point=(0, 0, 0.1)))
    figures["cylindrical"] = mech("cylindrical", lambda a, b: CylindricalJoint(
        "J", a, b, parent_point=(0, 0, -0.05), axis=(0, 0, 1),
        spring={"angle": 1.0, "slide": 500.0}))
    figures["screw"] = mech("screw", lambda a, b: ScrewJoint(
        "J", a, b, parent_point=(0, 0, -0.05), axis=(0, 0, 1), pitch=0.01))
    figures["universal"] = mech("universal", lambda a, b: UniversalJoint(
        "J", a, b, parent_point=(0.1, 0, 0), axis=(0, 0, 1), axis2=(1, 0, 0)))
    figures["planar"] = mech("planar", lambda a, b: PlanarJoint(
        "J", a, b, parent_point=(0.1, 0, 0), axis=(0, 0, 1), spring={"x": 10.0}))
    figures["free"] = mech("free", lambda a, b: FreeJoint(
        "J", a, b, parent_point=(0.1, 0, 0), spring={"z": 10.0}))
    for name, obj in figures.items():
        print(render(obj, os.path.join(OUT, f"{name}.svg")))
    import graphviz
    src = graphviz.Source.from_file(os.path.join(OUT, "architecture.dot"))
    print(src.render(outfile=os.path.join(OUT, "architecture.svg"), format="svg",
                     cleanup=True))


if __name__ == "__main__":
    main()

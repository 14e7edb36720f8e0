"""Jacobian blocks: the one mechanism by which joints and loads attach to bodies.

A block is a 0-junction ``J`` of dimension n whose bonds bring, from body junctions
k (a body's ``.v`` or ``.w``), the flows ``mu_k f_k`` with ``mu_k = -G_k``, so that the
flow of one further bond pointing into ``J`` (its port) is

    f_port = sum_k G_k f_k

and the common effort e of J acts on each body as the generalised force G_k^T e
(a force on ``.v``, a body-frame moment on ``.w``). Joints leave constraint blocks'
ports open (the causality assignment inserts an Se* there: its flow is sum G_k f_k =
dPhi/dt, its effort the reaction); a joint's free direction is a block whose port is the
joint's axis 1-junction; a load is a block whose port is its effort source.

G_k and Phi are functions of the bodies' orientations and positions. Each is a
:class:`Kernel`: a formula written once for a stack of instances (every joint of a
mechanism whose term has that form), which computes one instance as a stack of one. A
mechanism's bond graph shares one modulus context, :func:`frames_context`: per
evaluation it turns every body's quaternion and position (and their rates) into the
stacked :class:`Geometry`, and its ``batch`` evaluates all the terms of one form, and
all the Phi of one form, in one call.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np

from bondgraph import MTF, TF, BondGraph, ModulusContext, PositionConstraint, ZeroJunction

from elements.kernels.geometry import (
    AxesCombination, AxesCross, AxesDot, GapLength, GapRow, GimbalLockError, GimbalRate,
    Geometry, Kernel,
    OrientationGap, PointGap, PrismaticRotation, RevoluteGap, Sandwich, ScrewGap, SlideGap,
    _index_of, _rows,
)

__all__ = ["Term", "Junction", "Block", "build_block", "frames_context", "term_bond"]


class Junction(str, Enum):
    """Which junction a term meets: a body's velocity ``<body>.v`` (global, m/s), its
    angular velocity ``<body>.w`` (body frame, rad/s), or a joint coordinate's rate
    ``<port>.axis`` (a coupling's terms)."""

    V = "v"
    W = "w"
    AXIS = "axis"


@dataclass
class Term:
    """G_k of one junction: the body (or joint port) ``owner`` and which of its
    junctions (``kind``: :class:`Junction`). The junction's name, ``junction``, is
    derived from them and never parsed back.

    ``kernel`` gives G (n, 3) and its rate from the geometry; ``constant`` is set instead
    when G never changes (then a TF is used and no rate is needed).
    """

    owner: str
    kind: Junction
    kernel: Kernel | None = None
    constant: np.ndarray | None = None

    @property
    def junction(self) -> str:
        """The junction's element name (``<owner>.v``, ``.w`` or ``.axis``)."""
        return f"{self.owner}.{self.kind.value}"

    def G(self, geo: Geometry) -> np.ndarray:
        """G at ``geo``."""
        return self.constant if self.kernel is None else self.kernel.value(geo)

    def G_rate(self, geo: Geometry) -> np.ndarray:
        """dG/dt at ``geo`` (with rates)."""
        return np.zeros_like(self.constant) if self.kernel is None else self.kernel.rate(geo)


@dataclass
class Block:
    """A 0-junction ``name`` of dimension ``dim`` with its terms.

    ``phi`` (a :class:`Kernel`, ``phi(geo) -> (dim,)``) is the position-level constraint
    (constraint blocks only), defined so that dPhi/dt = sum G_k f_k on Phi = 0.
    """

    name: str
    dim: int
    terms: list[Term]
    bodies: tuple  # RigidBody objects whose states the G functions read
    phi: Kernel | None = None
    constraint: bool = False
    label: str | None = None


def _deps(bodies) -> tuple[str, ...]:
    out = []
    for b in bodies:
        if not b.is_ground:
            out += [b.q, b.r]
    return tuple(out)


def _geometry(bodies, values, rates=None) -> Geometry:
    """The geometry of ``bodies`` at the values (and rates) of their states, in the order
    of ``_deps(bodies)``."""
    return Geometry.of(bodies, values, rates)


class _Modulus:
    """An MTF's modulus mu = -G of one term (or its rate), as a function of the
    context's geometry; the batch recognises it."""

    __slots__ = ("kernel", "rate")

    def __init__(self, kernel: Kernel, rate: bool):
        self.kernel, self.rate = kernel, rate

    def __call__(self, geo: Geometry) -> np.ndarray:
        return -(self.kernel.rate(geo) if self.rate else self.kernel.value(geo))


def _compiled():
    """:mod:`elements.kernels.compiled` where numba is available and enabled (see
    :func:`bondgraph.fastlu.enabled`), else None (the numpy stacks)."""
    from bondgraph import fastlu
    if not fastlu.enabled():
        return None
    import elements.kernels.compiled as compiled
    return compiled


class _CompiledSandwiches:
    """Every :class:`Sandwich` of a batch (one rate flag and sign) in one compiled call
    (:func:`elements.kernels.compiled.sandwich`), whatever their forms."""

    @staticmethod
    def takes(kernel: Kernel) -> bool:
        """A Sandwich whose L has at most 3 rows and R at most 3 columns."""
        return type(kernel) is Sandwich and kernel.params[0].shape[0] <= 3 and \
            kernel.params[1].shape == (3, kernel.params[1].shape[1]) and \
            kernel.params[1].shape[1] <= 3 and kernel.params[0].shape[1] == 3

    def __init__(self, kernels, rate: bool, scale: float, offsets, module):
        n = len(kernels)
        self.kernels, self.rate, self.sign = kernels, bool(rate), float(scale)
        self.L = np.zeros((n, 3, 3))
        self.R = np.zeros((n, 3, 3))
        self.nrow = np.empty(n, dtype=np.int64)
        self.ncol = np.empty(n, dtype=np.int64)
        self.form = np.zeros(n, dtype=np.int64)      # bit 0: L = E (3 x 3), bit 1: R = E
        self.dest = np.zeros((n, 9), dtype=np.int64)
        for i, (k, off) in enumerate(zip(kernels, offsets)):
            L, R = k.params
            self.L[i, :L.shape[0]] = L
            self.R[i, :, :R.shape[1]] = R
            self.nrow[i], self.ncol[i] = L.shape[0], R.shape[1]
            self.form[i] = (1 if L.shape == (3, 3) and np.array_equal(L, np.eye(3)) else 0) \
                | (2 if R.shape == (3, 3) and np.array_equal(R, np.eye(3)) else 0)
            size = L.shape[0] * R.shape[1]
            self.dest[i, :size] = off + np.arange(size)
        self.kernel = module.sandwich
        self._index = None

    def __call__(self, geo: Geometry, out: np.ndarray) -> None:
        if self._index is not geo.index:
            self._index = geo.index
            self.ix, self.iy = _rows(self.kernels, geo.index)
        Adot = geo.Adot if self.rate else geo.A
        self.kernel(geo.A, Adot, self.rate, self.ix, self.iy, self.L, self.R, self.nrow,
                    self.ncol, self.form, self.dest, self.sign, out)


# the compiled form of each kernel type (elements.kernels.compiled): f(module, geo, rate, ia, ib,
# params, dest, sign, out); Phi kernels only as values. GimbalRate's returns the first
# instance in gimbal lock (or -1), which the caller raises as GimbalLockError
_COMPILED_KERNELS = {
    PointGap: lambda m, g, rate, ia, ib, p, *o: m.point_gap(g.A, g.r, ia, ib, *p, *o),
    RevoluteGap: lambda m, g, rate, ia, ib, p, *o: m.revolute_gap(g.A, ia, ib, *p, *o),
    SlideGap: lambda m, g, rate, ia, ib, p, *o: m.slide_gap(g.A, g.r, ia, ib, *p, *o),
    OrientationGap: lambda m, g, rate, ia, ib, p, *o: m.orientation_gap(g.A, ia, ib, *p, *o),
    PrismaticRotation: lambda m, g, rate, ia, ib, p, *o: m.prismatic_rotation(
        g.A, g.r, g.w if rate else g.r, g.v if rate else g.r, rate, ia, ib, *p, *o),
    AxesCross: lambda m, g, rate, ia, ib, p, *o: m.axes_cross(
        g.A, g.Adot if rate else g.A, rate, ia, ib, *p, *o),
    AxesDot: lambda m, g, rate, ia, ib, p, *o: m.axes_dot(g.A, ia, ib, *p, *o),
    AxesCombination: lambda m, g, rate, ia, ib, p, *o: m.axes_combination(
        g.A, g.Adot if rate else g.A, rate, ia, ib, *p, *o),
    ScrewGap: lambda m, g, rate, ia, ib, p, *o: m.screw_gap(g.A, g.r, ia, ib, *p, *o),
    GimbalRate: lambda m, g, rate, ia, ib, p, *o: m.gimbal_rate(
        g.A, g.Adot if rate else g.A, rate, ia, ib, *p, *o),
    GapRow: lambda m, g, rate, ia, ib, p, *o: m.gap_row(
        g.A, g.r, g.w if rate else g.r, g.v if rate else g.r, rate, ia, ib, *p, *o),
    GapLength: lambda m, g, rate, ia, ib, p, *o: m.gap_length(g.A, g.r, ia, ib, *p, *o),
}
_RATES_COMPILED = (PrismaticRotation, AxesCross, AxesCombination, GimbalRate, GapRow)


def _compiles(kernel: Kernel, rate: bool) -> bool:
    t = type(kernel)
    if t is PrismaticRotation or t is SlideGap:       # D of shape (3, k), k <= 3
        D = kernel.params[0]
        if D.ndim != 2 or D.shape[0] != 3 or D.shape[1] > 3:
            return False
    return t in _COMPILED_KERNELS and (not rate or t in _RATES_COMPILED)


class _CompiledKernels:
    """The kernels of a batch that :mod:`elements.kernels.compiled` has (see
    :data:`_COMPILED_KERNELS`), one compiled call per type."""

    def __init__(self, kernels, rate: bool, scale: float, offsets, module):
        self.sign = float(scale)
        self.rate = bool(rate)
        self.module = module
        self.groups = []
        by_form: dict[tuple, list] = {}
        for k, off in zip(kernels, offsets):
            by_form.setdefault((type(k), tuple(p.shape for p in k.params)), []).append((k, off))
        for (cls, _), sel in by_form.items():
            ks = [k for k, _ in sel]
            size = int(np.prod(ks[0].shape))
            dest = np.array([off + np.arange(size) for _, off in sel], dtype=np.int64)
            params = [np.ascontiguousarray(np.array(p, dtype=float))
                      for p in zip(*(k.params for k in ks))]
            self.groups.append([_COMPILED_KERNELS[cls], ks, dest, params, None, None, None])

    def __call__(self, geo: Geometry, out: np.ndarray) -> None:
        for g in self.groups:
            fn, ks, dest, params, index, ia, ib = g
            if index is not geo.index:
                g[4] = geo.index
                g[5], g[6] = ia, ib = _rows(ks, geo.index)
            bad = fn(self.module, geo, self.rate, ia, ib, params, dest, self.sign, out)
            if bad is not None and bad >= 0:            # (GimbalRate's: a joint in lock)
                raise GimbalLockError.of(ks[bad].joint)


def _batch(functions) -> Any:
    """The context's batch: all the terms' moduli (or rates), or all the Phi, stacked by
    kernel form; None when a function is not one of ours."""
    items = []
    for f in functions:
        if isinstance(f, _Modulus):
            items.append((f.kernel, f.rate, -1.0))
        elif isinstance(f, Kernel):
            items.append((f, False, 1.0))
        else:
            return None
    sizes = [int(np.prod(k.shape)) for k, _, _ in items]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    compiled = _compiled()
    groups: dict[tuple, list[int]] = {}
    for i, (k, rate, scale) in enumerate(items):
        key = k.key
        if compiled is not None and _CompiledSandwiches.takes(k):
            key = ("compiled", _CompiledSandwiches)
        elif compiled is not None and _compiles(k, rate):
            key = ("compiled", _CompiledKernels)
        groups.setdefault((key, rate, scale), []).append(i)
    plan = []
    index = None
    for (key, rate, scale), members in groups.items():
        if key[0] == "compiled":
            plan.append(key[1]([items[i][0] for i in members], rate, scale,
                               [offsets[i] for i in members], compiled))
            continue
        dest = np.array([np.arange(offsets[i], offsets[i + 1]) for i in members])
        plan.append(([items[i][0] for i in members], rate, scale, dest))
    total = int(offsets[-1])
    stacks: dict[int, list] = {}

    def run(geo: Geometry) -> np.ndarray:
        nonlocal index
        if index is not geo.index:           # the stacks' body rows, made once
            index = geo.index
            stacks.clear()
        out = np.empty(total)
        for i, entry in enumerate(plan):
            if isinstance(entry, (_CompiledSandwiches, _CompiledKernels)):
                entry(geo, out)
                continue
            kernels, rate, scale, dest = entry
            st = stacks.get(i)
            if st is None:
                st = stacks[i] = type(kernels[0]).stack(kernels, geo.index)
            val = st(geo, rate).reshape(dest.shape)
            out[dest] = -val if scale < 0 else val
        return out

    return run


class _Program:
    """Terms and Phi of a mechanism as one compiled call (:func:`elements.kernels.compiled.
    program`): ``outputs`` is one list per output vector of (kernel, sign) pairs, each
    kernel's value (or rate, with ``rate``) raveled, times sign, at its place in the
    list's concatenation. The groups are those of :class:`_CompiledSandwiches` and
    :class:`_CompiledKernels`."""

    _CODES = {Sandwich: 0, PointGap: 1, RevoluteGap: 2, SlideGap: 3, OrientationGap: 4,
              PrismaticRotation: 5, AxesCross: 6, AxesDot: 7, AxesCombination: 8,
              ScrewGap: 9, GimbalRate: 10, GapRow: 11, GapLength: 12}

    def __init__(self, module, index: dict[str, int], outputs, rate: bool):
        C = module
        self.module, self.rate = module, bool(rate)
        self.gimbals: dict[int, list[str]] = {}     # desc row -> its gimbals' joints
        rows, ints, flts = [], [], []
        n_int, n_flt = [0], [0]

        def put(store, count, arr) -> int:
            arr = np.ravel(arr)
            store.append(arr)
            count[0] += arr.size
            return count[0] - arr.size

        def rows_of(ks):
            ia, ib = _rows(ks, index)
            return put(ints, n_int, ia), put(ints, n_int, ib)

        self.sizes = []
        for target, items in enumerate(outputs):
            sizes = [int(np.prod(k.shape)) for k, _ in items]
            offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
            self.sizes.append(int(offsets[-1]))
            by_sign: dict[tuple, list[int]] = {}
            for i, (k, sign) in enumerate(items):
                by_sign.setdefault((type(k) is Sandwich, float(sign)), []).append(i)
            for (is_sandwich, sign), members in by_sign.items():
                ks = [items[i][0] for i in members]
                offs = [offsets[i] for i in members]
                if is_sandwich:
                    sw = _CompiledSandwiches(ks, rate, sign, offs, module)
                    row = np.zeros(C.D_COLUMNS, dtype=np.int64)
                    row[[C.D_CODE, C.D_N]] = C.SANDWICH, len(ks)
                    row[C.D_IA], row[C.D_IB] = rows_of(ks)
                    row[C.D_DEST] = put(ints, n_int, sw.dest)
                    row[C.D_NROW] = put(ints, n_int, sw.nrow)
                    row[C.D_NCOL] = put(ints, n_int, sw.ncol)
                    row[C.D_FORM] = put(ints, n_int, sw.form)
                    row[C.D_F0] = put(flts, n_flt, sw.L)
                    row[C.D_F1] = put(flts, n_flt, sw.R)
                    row[[C.D_TARGET, C.D_SIGN]] = target, int(sign)
                    rows.append(row)
                    continue
                for _, gks, dest, params, *_ in _CompiledKernels(ks, rate, sign, offs,
                                                                 module).groups:
                    row = np.zeros(C.D_COLUMNS, dtype=np.int64)
                    row[[C.D_CODE, C.D_N]] = self._CODES[type(gks[0])], len(gks)
                    row[C.D_IA], row[C.D_IB] = rows_of(gks)
                    row[C.D_DEST] = put(ints, n_int, dest)
                    if type(gks[0]) in (SlideGap, PrismaticRotation):
                        row[C.D_K] = params[0].shape[2]
                    if type(gks[0]) is GimbalRate:
                        self.gimbals[len(rows)] = [k.joint for k in gks]
                    for j, par in enumerate(params):      # (one after another)
                        at = put(flts, n_flt, par)
                        if j < 3:
                            row[C.D_F0 + j] = at
                    row[[C.D_TARGET, C.D_SIGN]] = target, int(sign)
                    rows.append(row)
        self.desc = np.array(rows, dtype=np.int64).reshape(-1, C.D_COLUMNS)
        self.ints = np.concatenate(ints).astype(np.int64) if ints else \
            np.zeros(0, dtype=np.int64)
        self.flts = np.concatenate(flts).astype(float) if flts else np.zeros(0)
        while len(self.sizes) < 2:
            self.sizes.append(0)

    @staticmethod
    def takes(functions, rate: bool, modulus: bool) -> list | None:
        """(kernel, sign) of each function when all are ours and compiled (moduli -G
        with the rate flag ``rate`` when ``modulus``, else Phi kernels), else None."""
        items = []
        for f in functions:
            if modulus and isinstance(f, _Modulus) and f.rate == rate:
                k, sign = f.kernel, -1.0
            elif not modulus and isinstance(f, Kernel):
                k, sign = f, 1.0
            else:
                return None
            if not (_CompiledSandwiches.takes(k) or
                    (type(k) is not Sandwich and _compiles(k, rate))):
                return None
            items.append((k, sign))
        return items

    @property
    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(desc, ints, flts): the program's table and packed arrays, as
        :func:`elements.kernels.compiled.program` takes them."""
        return self.desc, self.ints, self.flts

    def __call__(self, states: np.ndarray, state_rates: np.ndarray | None = None):
        out0, out1 = np.empty(self.sizes[0]), np.empty(self.sizes[1])
        states = np.ascontiguousarray(states, dtype=float)   # (program's fixed types)
        state_rates = states if state_rates is None else \
            np.ascontiguousarray(state_rates, dtype=float)
        g, i = self.module.program(states, state_rates, self.rate, self.desc, self.ints,
                                   self.flts, out0, out1)
        if g >= 0:
            raise GimbalLockError.of(self.gimbals[g][i])
        return out0, out1


class _Fused:
    """What :attr:`bondgraph.ModulusContext.fuse` returns for a mechanism: the terms'
    moduli and the Phi in one compiled call, the moduli's rates in another."""

    def __init__(self, module, index, values, rates, phi, n):
        self._values = _Program(module, index, [values, phi], rate=False)
        self._rates = _Program(module, index, [rates], rate=True)
        self._n = n

    def values(self, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._values(state.reshape(self._n, 7))

    def compiled(self) -> tuple:
        """What a compiled caller needs to run :meth:`values` and :meth:`rates` itself
        (:mod:`bondgraph._rk_kernels`): (the kernel :func:`elements.kernels.compiled.program`,
        the number of bodies, the values' program (desc, ints, flts), the rates'
        program, the sizes of the moduli and the Phi)."""
        return (self._values.module.program, self._n, self._values.arrays,
                self._rates.arrays, self._values.sizes[0], self._values.sizes[1])

    def rates(self, state: np.ndarray, state_rates: np.ndarray) -> np.ndarray:
        return self._rates(state.reshape(self._n, 7), state_rates.reshape(self._n, 7))[0]

    @staticmethod
    def c_source() -> str:
        """The C source of :func:`elements.kernels.compiled.program` (``bg_program``), for an
        exported FMU that runs :meth:`compiled`'s arrays without Python."""
        from elements.kernels.compiled_c import program_c_source
        return program_c_source()


def frames_context(bodies) -> ModulusContext:
    """One modulus context for all ``bodies`` (a mechanism's, ground included): its
    result is their :class:`Geometry`, computed once per evaluation from every moving
    body's quaternion and centre (gathered as one array), and its batch computes the
    terms and Phi of each kernel form in one call."""
    moving = [b for b in bodies if not b.is_ground]
    index = _index_of(bodies)
    n = len(moving)

    last: dict[bytes, Geometry] = {}      # the latest state's geometry (value and rate
                                         # contexts of one evaluation share it)
    compiled = _compiled()               # decided when the mechanism is built

    def value(vals):
        vals = np.asarray(vals, dtype=float)
        key = vals.tobytes()
        geo = last.get(key)
        if geo is None:
            s = vals.reshape(n, 7)
            if compiled is not None:
                geo = Geometry(index, *compiled.frames(s))
            else:
                geo = Geometry.from_states(index, s[:, :4], s[:, 4:])
            last.clear()
            last[key] = geo
        return geo

    def rate(vals, rates):
        geo = value(vals)
        s = np.asarray(vals, dtype=float).reshape(n, 7)
        d = np.asarray(rates, dtype=float).reshape(n, 7)
        if compiled is not None:
            w, v, Adot = compiled.rates(s[:, :4], d[:, :4], d[:, 4:], geo.A)
            out = Geometry(index, geo.A, geo.r, w, v)
            out._Adot = Adot
            return out
        return geo.with_rates(s[:, :4], d[:, :4], d[:, 4:])

    def fuse(values, rates, phi):
        if compiled is None:
            return None
        items = [_Program.takes(values, False, True), _Program.takes(rates, True, True),
                 _Program.takes(phi, False, False)]
        if any(i is None for i in items):
            return None
        return _Fused(compiled, index, *items, n)

    return ModulusContext(value=value, rate=rate, depends_on=_deps(moving), batch=_batch,
                          concatenated=True, fuse=fuse)


def term_bond(block: Block, term: Term) -> tuple[str, float]:
    """The bond by which ``term`` of ``block`` meets its body junction, and the sign by
    which that bond's effort is the generalised force G^T e on the body: a bond into
    the junction brings +effort, one out of it takes it away (-effort). Constant terms
    E and -E are one bond between the block and the body (``<term>.b``); the others go
    through a TF or MTF whose bond at the body is ``<term>.b1``, out of the junction."""
    ename = f"{block.name}.{term.owner}.{term.kind.value}"
    if term.constant is not None:
        g = np.asarray(term.constant, dtype=float)
        if g.shape == (block.dim, 3) and block.dim == 3 and np.array_equal(g, np.eye(3)):
            return f"{ename}.b", 1.0                 # block -> body junction (mu = -E)
        if g.shape == (block.dim, 3) and block.dim == 3 and np.array_equal(g, -np.eye(3)):
            return f"{ename}.b", -1.0                # body junction -> block (mu = +E)
    return f"{ename}.b1", -1.0


def build_block(bg: BondGraph, block: Block, context: ModulusContext | None, *,
                port_from: str | None = None, port_name: str | None = None,
                position_constraint: PositionConstraint | None = None) -> None:
    """Add ``block`` to ``bg``: its 0-junction, one MTF (modulus -G, from ``context``, a
    :func:`frames_context` that covers the block's bodies) or TF per term, and, when
    ``port_from`` is given, the port bond ``port_from -> block`` (its flow is
    sum G_k f_k). ``position_constraint`` gives the Phi of a block whose Phi is not a
    function of the bodies' geometry (a coupling's reads joint coordinates)."""
    pc = position_constraint
    if block.phi is not None:
        pc = PositionConstraint(block.phi, context.depends_on, context=context)
    bg.add(ZeroJunction(block.name, dim=block.dim, constraint=block.constraint,
                        constraint_label=block.label, position_constraint=pc))
    for term in block.terms:
        ename = f"{block.name}.{term.owner}.{term.kind.value}"
        bond, sign = term_bond(block, term)
        if bond == f"{ename}.b":                 # G = E or -E: one bond, no two-port
            if sign > 0:
                bg.connect(block.name, term.junction, name=bond)
            else:
                bg.connect(term.junction, block.name, name=bond)
            continue
        if term.constant is not None:
            bg.add(TF(ename, -np.asarray(term.constant, dtype=float)))
        else:
            bg.add(MTF(ename, _Modulus(term.kernel, False),
                       modulus_rate=_Modulus(term.kernel, True),
                       context=context, shape=(block.dim, 3)))
        bg.connect(term.junction, ename, name=f"{ename}.b1")
        bg.connect(ename, block.name, name=f"{ename}.b2")
    if port_from is not None:
        bg.connect(port_from, block.name, name=port_name or f"{block.name}.port")

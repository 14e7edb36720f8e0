"""The state-dependent parts of an assembled model, evaluated in batches.

At every evaluation a model needs, besides its junction structure and fields, four
things its elements compute from the state: the modulated two-ports' moduli, their
rates along the motion, the position constraints Phi of the constraint junctions, and
the kinematic states' rates. Element by element that is one Python call each, and for a
mechanism of N bodies several times N calls. :class:`StateFunctions` plans the
evaluation once per model:

- members that share a :class:`~bondgraph.ModulusContext` whose ``batch`` vectorises
  them are computed by one call (for the element library: every joint term of one
  form, all bodies at once);
- a ``concatenated`` context receives its states by one gather from the state vector;
- kinematic states that integrate their flow unchanged are one gather; those with a
  ``vectorized`` rate function are one call per function;
- everything else is called one by one, as the elements define it.

The results are flat vectors in the model's orders (the layout's dynamic moduli, the
unknown sources, the kinematic states). ``tests/unit/test_moduli.py`` checks them
against the elements called one by one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .errors import ModelError

__all__ = ["StateFunctions"]


def _affine_arrays(items) -> tuple | None:
    """(dest (k,), state indices (k, m), coefficients (k, m), constants (k,)) of affine
    Phi members ``(dest, indices, coefficients, constant)``, padded with zero
    coefficients to the longest; None for none."""
    if not items:
        return None
    m = max(len(i) for _, i, _, _ in items)
    idx = np.zeros((len(items), m), dtype=np.int64)
    coef = np.zeros((len(items), m))
    for k, (_, i, c, _) in enumerate(items):
        idx[k, :len(i)] = i
        coef[k, :len(c)] = c
    return (np.array([d for d, _, _, _ in items], dtype=np.int64), idx, coef,
            np.array([c0 for _, _, _, c0 in items]))


def _index(slices) -> np.ndarray:
    """The positions of these slices, concatenated."""
    parts = [np.arange(s.start, s.stop) for s in slices]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


@dataclass
class _Member:
    """One function of the state whose value lands at ``dest`` of the output."""

    fn: Callable
    context: Any                  # a ModulusContext or None
    depends_on: tuple[str, ...]
    dest: np.ndarray              # positions in the output (row-major value)
    shape: tuple[int, ...]
    what: str                     # for error messages: "MTF 'J1.t.b1.w'"


@dataclass
class _Batch:
    """Members of one context computed by one batched function."""

    fn: Callable
    context: Any
    dest: np.ndarray
    what: str


class _Plan:
    """How to compute one flat output (moduli, their rates or Phi) from the state."""

    def __init__(self, members: list[_Member], size: int, rates: bool):
        self.size = size
        self.rates = rates
        self.entries: list[_Member | _Batch] = []
        by_context: dict[int, list[_Member]] = {}
        for m in members:
            if m.context is not None and m.context.batch is not None:
                by_context.setdefault(id(m.context), []).append(m)
            else:
                self.entries.append(m)
        for group in by_context.values():
            ctx = group[0].context
            fn = ctx.batch([m.fn for m in group])
            if fn is None:
                self.entries.extend(group)
            else:
                self.entries.append(_Batch(fn, ctx, np.concatenate([m.dest for m in group]),
                                           ", ".join(m.what for m in group[:3])
                                           + (", ..." if len(group) > 3 else "")))
        # a single batch that writes the whole output in order: its result is the output
        self.whole = None
        if len(self.entries) == 1 and isinstance(self.entries[0], _Batch) and \
                np.array_equal(self.entries[0].dest, np.arange(size)):
            self.whole = self.entries[0]


class StateFunctions:
    """Moduli, modulus rates, Phi and kinematic rates of ``model`` at a state (see the
    module docstring). Built once per model by :class:`~bondgraph.StateSpaceModel`."""

    def __init__(self, model: Any):
        self.model = m = model
        L = m.layout
        slices = m.state_slices
        self._slices = slices
        # where each kinematic state sits in the vector of kinematic rates
        self._kin_pos: dict[str, slice] = {}
        start = 0
        for ks in m.kinematic:
            self._kin_pos[ks.name] = slice(start, start + ks.dim)
            start += ks.dim
        self.n_kin = start

        # moduli and their rates, in the layout's order of dynamic two-ports
        members_v, members_r, off = [], [], 0
        for name, mod, _start, n2, n1 in L.dynamic:
            el = m._elements[name]
            dest = np.arange(off, off + n2 * n1)
            off += n2 * n1
            what = f"{el.kind} '{name}'"
            members_v.append(_Member(mod.value, mod.context, tuple(mod.depends_on), dest,
                                     (n2, n1), what))
            members_r.append(_Member(mod.rate, mod.context, tuple(mod.depends_on), dest,
                                     (n2, n1), what))
        self._moduli = _Plan(members_v, off, rates=False)
        self._rates = _Plan(members_r, off, rates=True)

        # Phi per unknown source (NaN where its junction defines none); the affine ones
        # (declared so, one component, scalar states: couplings) beside a fused context
        members_p, self._phi_nan, fusable, affine = [], [], [], []
        for n, pc in zip(m.unknown_sources, m.position_constraints):
            sl = m.u2_slices[n]
            dest = np.arange(sl.start, sl.stop)
            if pc is None:
                self._phi_nan.append(dest)
                continue
            mb = _Member(pc.value, pc.context, tuple(pc.depends_on), dest,
                         (sl.stop - sl.start,), f"position constraint of '{n}'")
            members_p.append(mb)
            if pc.affine is not None and pc.context is None and dest.size == 1 and \
                    all(slices[d].stop - slices[d].start == 1 for d in pc.depends_on) and \
                    len(pc.affine[0]) == len(pc.depends_on):
                affine.append((int(dest[0]), [slices[d].start for d in pc.depends_on],
                               [float(c) for c in pc.affine[0]], float(pc.affine[1])))
            else:
                fusable.append(mb)
        self._phi_nan = np.concatenate(self._phi_nan) if self._phi_nan else \
            np.zeros(0, dtype=np.int64)
        self._phi = _Plan(members_p, m.n_u2, rates=False)
        self._phi_affine = _affine_arrays(affine)

        self._gathers: dict[int, tuple[np.ndarray, np.ndarray | None]] = {}
        self._kin_plan(m)
        self._fused = self._fuse(members_v, members_r, fusable)
        if self._fused is None:
            self._phi_affine = None      # (the Phi plan computes them with the others)

    def _fuse(self, members_v, members_r, members_p):
        """The context's ``fuse`` (see :class:`~bondgraph.ModulusContext`) when one
        concatenated context serves every modulus, modulus rate and Phi: (fused object,
        its states' positions in x and in the kinematic rates, where the Phi go (None: in
        order), the sizes of the moduli and of the Phi), else None."""
        members = members_v + members_r + members_p
        if not members:
            return None
        ctx = members[0].context
        if ctx is None or getattr(ctx, "fuse", None) is None or not ctx.concatenated or \
                any(mb.context is not ctx for mb in members):
            return None
        xi, ri = self._gather(ctx)
        if ri is None:
            return None
        fused = ctx.fuse([mb.fn for mb in members_v], [mb.fn for mb in members_r],
                         [mb.fn for mb in members_p])
        if fused is None:
            return None

        def where(ms, size):
            dest = np.concatenate([mb.dest for mb in ms]) if ms else \
                np.zeros(0, dtype=np.int64)
            return None if np.array_equal(dest, np.arange(size)) else dest
        if where(members_v, self._moduli.size) is not None or \
                where(members_r, self._rates.size) is not None:
            return None                  # (the members are made in the outputs' order)
        self._fused_what = ", ".join(mb.what for mb in members_v[:3]) + \
            (", ..." if len(members_v) > 3 else "")
        return (fused, xi, ri, where(members_p, self.model.n_u2), self._moduli.size,
                sum(mb.dest.size for mb in members_p))

    # -- contexts -------------------------------------------------------------------------
    def _gather(self, ctx) -> tuple[np.ndarray, np.ndarray | None]:
        """Positions of a concatenated context's states in x and in the kinematic rates."""
        g = self._gathers.get(id(ctx))
        if g is None:
            xi = _index([self._slices[d] for d in ctx.depends_on])
            ri = (_index([self._kin_pos[d] for d in ctx.depends_on])
                  if all(d in self._kin_pos for d in ctx.depends_on) else None)
            g = self._gathers[id(ctx)] = (xi, ri)
        return g

    def _context_value(self, ctx, x, shared, kin_rates):
        key = id(ctx)
        if key in shared:
            return shared[key]
        if ctx.concatenated:
            xi, ri = self._gather(ctx)
            if kin_rates is None:
                val = ctx.value(x[xi])
            else:
                val = ctx.rate(x[xi], kin_rates[ri])
        else:
            deps = [x[self._slices[d]] for d in ctx.depends_on]
            if kin_rates is None:
                val = ctx.value(*deps)
            else:
                val = ctx.rate(*deps, *[kin_rates[self._kin_pos[d]] for d in ctx.depends_on])
        shared[key] = val
        return val

    def _run(self, plan: _Plan, x, shared, kin_rates=None, out=None) -> np.ndarray:
        kr = kin_rates if plan.rates else None
        if plan.whole is not None and out is None:   # one batch, the whole output in order
            e = plan.whole
            val = e.fn(self._context_value(e.context, x, shared, kr))
            if isinstance(val, np.ndarray) and val.shape == (plan.size,) and \
                    val.dtype == np.float64:
                return val.copy()        # (a batch may hand out a buffer it reuses)
        if out is None:
            out = np.empty(plan.size)
        for e in plan.entries:
            if isinstance(e, _Batch):
                val = np.asarray(e.fn(self._context_value(e.context, x, shared, kr)),
                                 dtype=float)
                if val.shape != (e.dest.size,):
                    raise ModelError(f"the batched values of {e.what} have shape "
                                     f"{val.shape}; valid: ({e.dest.size},)")
                out[e.dest] = val
                continue
            if e.context is not None:
                val = e.fn(self._context_value(e.context, x, shared, kr))
            else:
                deps = [x[self._slices[d]] for d in e.depends_on]
                if kr is not None:
                    deps += [kr[self._kin_pos[d]] for d in e.depends_on]
                val = e.fn(*deps)
            val = np.asarray(val, dtype=float)
            if val.shape != e.shape:
                kind = "modulus_rate" if plan.rates else "modulus"
                if plan is self._phi:
                    raise ModelError(f"{e.what} returned shape {val.shape}; valid: {e.shape}")
                raise ModelError(f"{e.what}: {kind} returned shape {val.shape}; valid: "
                                 f"{e.shape} (n_out, n_in)")
            out[e.dest] = val.ravel()
        return out

    # -- the four outputs -----------------------------------------------------------------
    def moduli(self, x: np.ndarray, shared: dict | None = None) -> np.ndarray:
        """Every dynamic modulus at state ``x``, raveled and concatenated in the layout's
        order (``shared``: the contexts' results at x, filled in as computed)."""
        return self._run(self._moduli, x, {} if shared is None else shared)

    def moduli_rates(self, x: np.ndarray, kin_rates: np.ndarray) -> np.ndarray:
        """Their time derivatives along the motion (``kin_rates``: the kinematic states'
        rates, in the model's order of kinematic states)."""
        f = self._fused
        if f is None:
            return self._run(self._rates, x, {}, kin_rates)
        fused, xi, ri, _, size, _ = f
        r = np.asarray(fused.rates(x[xi], kin_rates[ri]), dtype=float)
        if r.shape != (size,):
            raise ModelError(f"the fused modulus rates have shape {r.shape} (of "
                             f"{self._fused_what}); valid: ({size},)")
        return r

    def moduli_and_phi(self, x: np.ndarray, shared: dict | None = None
                       ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`moduli` and :meth:`phi` at ``x``, in one call where the model's context
        fuses them."""
        f = self._fused
        if f is None:
            shared = {} if shared is None else shared
            return self.moduli(x, shared), self.phi(x, shared)
        fused, xi, _, dest_p, size, n_phi = f
        v, p = fused.values(x[xi])
        v, p = np.asarray(v, dtype=float), np.asarray(p, dtype=float)
        if v.shape != (size,) or p.shape != (n_phi,):
            raise ModelError(f"the fused moduli and Phi have shapes {v.shape}, {p.shape} "
                             f"(of {self._fused_what}); valid: ({size},), ({n_phi},)")
        if dest_p is not None:         # (NaN where a source has no Phi)
            p, out = np.full(self.model.n_u2, np.nan), p
            p[dest_p] = out
        if self._phi_affine is not None:
            dest, idx, coef, const = self._phi_affine
            p[dest] = (coef * x[idx]).sum(axis=1) + const
        return v, p

    def phi(self, x: np.ndarray, shared: dict | None = None) -> np.ndarray:
        """Phi of every unknown source (m or rad; NaN where none is defined)."""
        if not self._phi_nan.size:
            return self._run(self._phi, x, {} if shared is None else shared)
        out = np.empty(self.model.n_u2)
        out[self._phi_nan] = np.nan
        return self._run(self._phi, x, {} if shared is None else shared, out=out)

    # -- kinematic rates ------------------------------------------------------------------
    def _kin_plan(self, m) -> None:
        """Group the kinematic states: copies of one flow, vectorised rate functions,
        the rest one by one."""
        copy_dst, copy_src = [], []
        groups: dict[tuple, list] = {}
        self._kin_single = []
        f0, k = 0, 0                    # position in the flows, index of the source
        for ks in m.kinematic:
            srcs = []
            for _ in ks.sources:
                n = len(m.kin_flow_idx[k])
                srcs.append(np.arange(f0, f0 + n))
                f0, k = f0 + n, k + 1
            dst = np.arange(self._kin_pos[ks.name].start, self._kin_pos[ks.name].stop)
            if ks.rate is None:
                copy_dst.append(dst)
                copy_src.append(srcs[0])
            elif ks.vectorized:
                key = (id(ks.rate), ks.dim, tuple(s.size for s in srcs),
                       tuple(self._slices[r].stop - self._slices[r].start for r in ks.reads))
                groups.setdefault(key, []).append((ks, dst, srcs))
            else:
                self._kin_single.append((ks, dst, srcs))
        self._copy = (np.concatenate(copy_dst) if copy_dst else np.zeros(0, dtype=np.int64),
                      np.concatenate(copy_src) if copy_src else np.zeros(0, dtype=np.int64))
        self._kin_groups = []
        for items in groups.values():
            ks0 = items[0][0]
            state = np.array([_index([self._slices[ks.name]]) for ks, _, _ in items])
            flows = [np.array([s[k] for _, _, s in items]) for k in range(len(items[0][2]))]
            reads = [np.array([_index([self._slices[ks.reads[k]]]) for ks, _, _ in items])
                     for k in range(len(ks0.reads))]
            dst = np.array([d for _, d, _ in items])
            self._kin_groups.append((ks0.rate, state, flows, reads, dst,
                                     [ks.name for ks, _, _ in items]))

    def kinematic_rates(self, x: np.ndarray, flows: np.ndarray) -> np.ndarray:
        """d/dt of every kinematic state, from the state and the flows they integrate
        (``flows``: the model's kinematic flow rows, in order)."""
        out = np.empty(self.n_kin)
        dst, src = self._copy
        out[dst] = flows[src]
        for rate, state, fl, reads, gdst, names in self._kin_groups:
            r = np.asarray(rate(x[state], *[flows[f] for f in fl], *[x[i] for i in reads]),
                           dtype=float)
            if r.shape != gdst.shape:
                raise ModelError(f"kinematic states {', '.join(names[:3])}: the vectorised "
                                 f"rate returned shape {r.shape}; valid: {gdst.shape}")
            out[gdst] = r
        for ks, d, srcs in self._kin_single:
            r = np.asarray(ks.rate(x[self._slices[ks.name]], *[flows[s] for s in srcs],
                                   *[x[self._slices[n]] for n in ks.reads]), dtype=float)
            if r.shape != (ks.dim,):
                raise ModelError(f"kinematic state '{ks.name}': rate returned shape "
                                 f"{r.shape}; valid: ({ks.dim},)")
            out[d] = r
        return out

    # -- for compiled callers -------------------------------------------------------------
    def compiled_parts(self) -> tuple[dict | None, str]:
        """What a compiled caller needs to compute :meth:`moduli_and_phi`,
        :meth:`moduli_rates` and :meth:`kinematic_rates` itself
        (:mod:`bondgraph._rk_kernels`), or (None, why not).

        Available where one fused context computes every modulus, modulus rate and Phi
        and offers its compiled kernel (``fused.compiled()``), and the kinematic states
        are copies of flows and at most one vectorised rate function that offers its
        compiled kernel (``rate.compiled_kernel()``: (state (n, d), flow (n, k)) ->
        (n, d)) and reads no other state; or where there is nothing to compute (constant
        moduli, no Phi): then ``program`` is None. The dict holds: ``program`` (kernel), ``n``
        (bodies), ``values`` and ``rates`` (its arrays), ``n_moduli``, ``n_phi``,
        ``xi``, ``ri`` (the context's states in x and in the kinematic rates),
        ``dest_p`` (the Phi's positions among the unknown sources), ``copy_dst``,
        ``copy_src``, ``rate_kernel`` (or None), ``q_state``, ``q_flow``, ``q_dst``;
        ``program_c`` and ``rate_c``: functions giving the C source of the program and
        of the rate kernel where they offer one (their ``c_source``; an exported FMU
        compiles them, :mod:`bondgraph.fmu`), else None; ``phi_affine``: the affine
        position constraints computed beside the program (``(dest, state index, coef,
        constant)`` arrays: Phi[dest] = sum coef x[index] + constant), or None."""
        f = self._fused
        if f is None and (self._moduli.size or self._phi.entries):
            return None, ("the moduli, their rates and Phi are not computed by one fused "
                          "context")
        if f is None:                    # (nothing to compute: constant moduli, no Phi)
            none = (np.zeros((0, 0), dtype=np.int64), np.zeros(0, dtype=np.int64),
                    np.zeros(0))
            program, n, values, rates, n_mod, n_p = None, 0, none, none, 0, 0
            xi = ri = np.zeros(0, dtype=np.int64)
            dest_p, n_phi, fused = None, 0, None
        else:
            fused, xi, ri, dest_p, size, n_phi = f
            get = getattr(fused, "compiled", None)
            if get is None:
                return None, "the fused moduli offer no compiled kernel"
            program, n, values, rates, n_mod, n_p = get()
            if n_mod != size or n_p != n_phi or xi.size != 7 * n or ri.size != 7 * n:
                return None, "the fused moduli's compiled kernel does not fit (sizes differ)"
        if self._kin_single:
            return None, (f"kinematic state '{self._kin_single[0][0].name}' has a rate "
                          f"function that is not vectorised")
        if len(self._kin_groups) > 1:
            return None, "more than one vectorised kinematic rate function"
        c_source = getattr(fused, "c_source", None)
        out = {"program": program, "n": n, "values": values, "rates": rates,
               "program_c": c_source, "rate_c": None, "phi_affine": self._phi_affine,
               "n_moduli": n_mod, "n_phi": n_phi, "xi": xi, "ri": ri,
               "dest_p": np.arange(n_phi) if dest_p is None else dest_p,
               "copy_dst": self._copy[0], "copy_src": self._copy[1], "rate_kernel": None,
               "q_state": np.zeros((0, 0), dtype=np.int64),
               "q_flow": np.zeros((0, 0), dtype=np.int64),
               "q_dst": np.zeros((0, 0), dtype=np.int64)}
        for rate, state, flows, reads, dst, names in self._kin_groups:
            get = getattr(rate, "compiled_kernel", None)
            kernel = get() if get is not None else None
            if kernel is None or len(flows) != 1 or reads:
                return None, (f"kinematic states {', '.join(names[:3])}: their rate "
                              f"function offers no compiled kernel")
            c_source = getattr(rate, "c_source", None)
            out.update(rate_kernel=kernel, q_state=state, q_flow=flows[0], q_dst=dst,
                       rate_c=c_source)
        return out, ""

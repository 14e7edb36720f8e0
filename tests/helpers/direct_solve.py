"""An independent reference for the reduction: one dense solve of every junction equation
and constitutive law (and, for constraints that need it, their time derivatives).

It shares no code with bondgraph.junction or bondgraph.reduction: it reads the graph's
elements and bonds and writes the equations of method.md section 5a itself.
"""

from __future__ import annotations

import numpy as np

from bondgraph.element import Category, StateView


def _skew(v):
    x, y, z = v
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


class _Builder:
    def __init__(self, n):
        self.rows, self.rhs, self.n = [], [], n

    def add(self, coeffs: dict[int, float], rhs: float = 0.0):
        row = np.zeros(self.n)
        for k, v in coeffs.items():
            row[k] += v
        self.rows.append(row)
        self.rhs.append(rhs)


def direct_solution(model, t, x, stabilization=None):
    """(xdot, U2) at (t, x) by direct dense solves of all the graph's equations."""
    g = model.graph
    els = g.elements
    bonds = g.bonds
    off, o = {}, 0
    for b in bonds:
        off[b.name] = o
        o += b.dim
    nh = o
    nv = 2 * nh
    E = lambda b, k: off[b.name] + k          # noqa: E731
    Fl = lambda b, k: nh + off[b.name] + k    # noqa: E731
    s = StateView(np.asarray(x, float), model.state_slices)
    p = model.parameters

    def moduli():
        out = {}
        for n, el in els.items():
            if el.category.is_two_port:
                mod = el.modulus(p)
                if mod.constant is not None:
                    out[n] = (np.asarray(mod.constant, float), np.zeros(mod.shape))
                else:
                    out[n] = (np.asarray(mod.value_at(*[s[d] for d in mod.depends_on]), float), None)
        return out

    mods = moduli()

    def junction_rows(B, offset, mu_key):
        """Junction equations on the variable block starting at ``offset``."""
        for n, el in els.items():
            cat = el.category
            bl = g.bonds_of(n)
            if cat.is_junction:
                same = E if cat is Category.ZERO else Fl
                summed = Fl if cat is Category.ZERO else E
                for b in bl[1:]:
                    for k in range(el.dim):
                        B.add({offset + same(bl[0], k): 1.0, offset + same(b, k): -1.0})
                for k in range(el.dim):
                    B.add({offset + summed(b, k): float(b.sign_at(n)) for b in bl})
            elif cat.is_two_port:
                ports = {(b.tail_port if b.tail == n else b.head_port): b for b in bl}
                b1, b2 = ports["in"], ports["out"]
                mu = mods[n][0] if mu_key == "value" else None
                n2, n1 = mods[n][0].shape
                tf = cat is Category.TRANSFORMER
                for i in range(n2):
                    c = {offset + (Fl(b2, i) if tf else E(b2, i)): 1.0}
                    for j in range(n1):
                        c[offset + Fl(b1, j)] = c.get(offset + Fl(b1, j), 0.0) - mu[i, j]
                    B.add(c)
                for j in range(n1):
                    c = {offset + E(b1, j): 1.0}
                    for i in range(n2):
                        k2 = offset + (E(b2, i) if tf else Fl(b2, i))
                        c[k2] = c.get(k2, 0.0) - mu[i, j]
                    B.add(c)

    def law_rows(B, with_unknown_flow_zero):
        U1 = {}
        for n, el in els.items():
            cat = el.category
            if cat.is_junction or cat.is_two_port:
                continue
            (b,) = g.bonds_of(n)
            d = el.dim
            if cat in (Category.INERTIA, Category.CAPACITANCE):
                Fm = el.field_matrix(p)
                X = s[el.state_name]
                co = [Fl(b, k) for k in range(d)] if cat is Category.INERTIA else \
                    [E(b, k) for k in range(d)]
                val = Fm @ X
                for k in range(d):
                    B.add({co[k]: 1.0}, val[k])
            elif cat is Category.RESISTANCE:
                Rm = el.resistance_matrix(p)
                for i in range(d):
                    c = {E(b, i): 1.0}
                    for j in range(d):
                        c[Fl(b, j)] = c.get(Fl(b, j), 0.0) - Rm[i, j]
                    B.add(c)
            elif cat is Category.EULER:
                RE = el.euler_matrix(s)
                for i in range(d):
                    c = {E(b, i): 1.0}
                    for j in range(d):
                        c[Fl(b, j)] = c.get(Fl(b, j), 0.0) - RE[i, j]
                    B.add(c)
            elif cat in (Category.EFFORT_SOURCE, Category.FLOW_SOURCE):
                law = el.law(p)
                v = law.value(t, s)
                U1[n] = (law, b)
                for k in range(d):
                    B.add({(E if cat is Category.EFFORT_SOURCE else Fl)(b, k): 1.0}, v[k])
            elif cat is Category.UNKNOWN_EFFORT and with_unknown_flow_zero:
                for k in range(d):
                    B.add({Fl(b, k): 1.0})
        return U1

    unknown = [n for n, el in els.items() if el.category is Category.UNKNOWN_EFFORT]

    def finish(w, wdot=None):
        xd = []
        for n, el in els.items():
            if el.category in (Category.INERTIA, Category.CAPACITANCE):
                (b,) = g.bonds_of(n)
                sel = E if el.category is Category.INERTIA else Fl
                xd += [w[sel(b, k)] for k in range(el.dim)]
        for ks in g.kinematic_states:
            src = g.bonds_of(ks.source)[0] if ks.source in els else g.bond(ks.source)
            fl = np.array([w[Fl(src, k)] for k in range(src.dim)])
            xd += list(fl if ks.rate is None else ks.rate(s[ks.name], fl))
        U2 = np.concatenate([[w[E(g.bonds_of(n)[0], k)] for k in range(els[n].dim)]
                             for n in unknown]) if unknown else np.zeros(0)
        return np.array(xd), U2

    # level 1, with the Se* flows set to zero (Eq. (14) graphs and free graphs)
    B = _Builder(nv)
    junction_rows(B, 0, "value")
    law_rows(B, True)
    A1 = np.array(B.rows)
    r1 = np.array(B.rhs)
    if A1.shape[0] == nv and np.linalg.matrix_rank(A1) == nv:
        return finish(np.linalg.solve(A1, r1))

    # Eq. (15) graphs: the flows follow from level 1 without the Se* rows ...
    B = _Builder(nv)
    junction_rows(B, 0, "value")
    U1 = law_rows(B, False)
    A0, r0 = np.array(B.rows), np.array(B.rhs)
    w0 = np.linalg.lstsq(A0, r0, rcond=None)[0]
    kin_rate = {}
    for ks in g.kinematic_states:
        src = g.bonds_of(ks.source)[0] if ks.source in els else g.bond(ks.source)
        fl = np.array([w0[Fl(src, k)] for k in range(src.dim)])
        kin_rate[ks.name] = fl if ks.rate is None else np.asarray(ks.rate(s[ks.name], fl))
    rates = StateView(np.concatenate([kin_rate[k.name] for k in g.kinematic_states])
                      if g.kinematic_states else np.zeros(0),
                      {k.name: sl for k, sl in zip(
                          g.kinematic_states,
                          _slices([k.dim for k in g.kinematic_states]))})
    # ... then w and its rate together, with d(c)/dt = 0 (or Baumgarte's law)
    N = 2 * nv
    B = _Builder(N)
    junction_rows(B, 0, "value")
    law_rows(B, False)
    start2 = len(B.rows)
    junction_rows(B, nv, "value")            # A wdot + Adot w = 0 (Adot w added below)
    row = start2
    for n, el in els.items():
        cat = el.category
        bl = g.bonds_of(n)
        if cat.is_junction:
            row += (len(bl) - 1) * el.dim + el.dim
        elif cat.is_two_port:
            mod = el.modulus(p)
            n2, n1 = mod.shape
            if mod.constant is None:
                md = np.asarray(mod.rate_at(*[s[d] for d in mod.depends_on],
                                         *[rates[d] for d in mod.depends_on]), float)
            else:
                md = np.zeros((n2, n1))
            ports = {(b.tail_port if b.tail == n else b.head_port): b for b in bl}
            b1, b2 = ports["in"], ports["out"]
            tf = cat is Category.TRANSFORMER
            for i in range(n2):
                for j in range(n1):
                    B.rows[row + i][Fl(b1, j)] -= md[i, j]
            for j in range(n1):
                for i in range(n2):
                    B.rows[row + n2 + j][E(b2, i) if tf else Fl(b2, i)] -= md[i, j]
            row += n1 + n2
    # derivative laws
    for n, el in els.items():
        cat = el.category
        if cat.is_junction or cat.is_two_port:
            continue
        (b,) = g.bonds_of(n)
        d = el.dim
        if cat is Category.INERTIA:            # fdot = F edot... fdot = F pdot = F e
            Fm = el.field_matrix(p)
            for i in range(d):
                c = {nv + Fl(b, i): 1.0}
                for j in range(d):
                    c[E(b, j)] = c.get(E(b, j), 0.0) - Fm[i, j]
                B.add(c)
        elif cat is Category.CAPACITANCE:      # edot = K qdot = K f
            Km = el.field_matrix(p)
            for i in range(d):
                c = {nv + E(b, i): 1.0}
                for j in range(d):
                    c[Fl(b, j)] = c.get(Fl(b, j), 0.0) - Km[i, j]
                B.add(c)
        elif cat is Category.RESISTANCE:
            Rm = el.resistance_matrix(p)
            for i in range(d):
                c = {nv + E(b, i): 1.0}
                for j in range(d):
                    c[nv + Fl(b, j)] = c.get(nv + Fl(b, j), 0.0) - Rm[i, j]
                B.add(c)
        elif cat is Category.EULER:            # e = -h~ f: edot = -hdot~ f - h~ fdot
            h = s[f"p_{el.momentum}"]
            (bi,) = g.bonds_of(el.momentum)
            fk = np.array([w0[Fl(b, k)] for k in range(3)])
            # -hdot~ f = f~ hdot, hdot = effort on the I bond (level-1 variable)
            ft = _skew(fk)
            for i in range(3):
                c = {nv + E(b, i): 1.0}
                for j in range(3):
                    c[E(bi, j)] = c.get(E(bi, j), 0.0) - ft[i, j]
                    c[nv + Fl(b, j)] = c.get(nv + Fl(b, j), 0.0) - _skew(h)[i, j]
                B.add(c)
        elif cat in (Category.EFFORT_SOURCE, Category.FLOW_SOURCE):
            law = el.law(p)
            rv = law.rate(t, s) if law.rate is not None else np.zeros(d)
            for k2 in range(d):
                B.add({nv + (E if cat is Category.EFFORT_SOURCE else Fl)(b, k2): 1.0}, rv[k2])
        elif cat is Category.UNKNOWN_EFFORT:
            cflow = np.array([w0[Fl(b, k2)] for k2 in range(d)])
            target = np.zeros(d)
            if stabilization is not None:
                idx = unknown.index(n)
                phi = np.nan_to_num(model.evaluate(t, x).phi[model.u2_slices[n]])
                target = -(2 * stabilization.alpha * cflow + stabilization.beta ** 2 * phi)
            for k2 in range(d):
                B.add({nv + Fl(b, k2): 1.0}, target[k2])     # d(c)/dt
                B.add({nv + E(b, k2): 1.0})                   # U2dot: free, fix it at 0
    A = np.array(B.rows)
    r = np.array(B.rhs)
    sol = np.linalg.lstsq(A, r, rcond=None)[0]
    return finish(sol[:nv])


def _slices(dims):
    out, o = [], 0
    for d in dims:
        out.append(slice(o, o + d))
        o += d
    return out

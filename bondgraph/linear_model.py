"""A linear model with named states, inputs and outputs, and what is done with one.

- :class:`LinearModel`: dx/dt = A dx + B du, dy = C dx + D du about an operating point
  (frozen; the matrices, the names, the operating point, the estimated errors of the
  derivatives).
- :class:`Modes`: eigenvalues, natural frequencies, damping ratios and mode shapes.

A :class:`LinearModel` exports itself to python-control (:meth:`LinearModel.to_control`,
the optional ``control`` extra) and to scipy (:meth:`LinearModel.to_scipy`), gives
transfer functions (:meth:`LinearModel.transfer`), Bode and step plots as PNG
(:meth:`LinearModel.bode_plot`, :meth:`LinearModel.step_plot`, matplotlib), and writes its
matrices with their names as CSV, MAT and JSON (:meth:`LinearModel.write`).
:func:`~bondgraph.linearize` (any state-space model) and
:func:`~elements.linearize_mechanism` (mechanisms, in joint coordinates) make one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._files import atomic_path, write_text
from ._plot import pyplot
from .errors import ModelError, did_you_mean, require_extra

__all__ = ["LinearModel", "Modes", "FORMATS"]

FORMATS = ("csv", "mat", "json")
"""The file formats :meth:`LinearModel.write` writes."""


@dataclass(frozen=True)
class Modes:
    """The modes of a linear model: the eigen-decomposition of A.

    Attributes
    ----------
    eigenvalues : ndarray, complex, shape (n,)
        Sorted by natural frequency, then by real part (1/s).
    natural_frequencies : ndarray, shape (n,)
        |lambda| (rad/s): the undamped natural frequency of a complex pair, the rate of a
        real mode.
    frequencies_hz : ndarray, shape (n,)
        ``natural_frequencies / (2 pi)`` (Hz).
    damping_ratios : ndarray, shape (n,)
        -Re(lambda) / |lambda| (1 for a stable real mode, -1 for an unstable one, NaN for
        lambda = 0).
    shapes : ndarray, complex, shape (n_states, n)
        The eigenvectors (columns), each scaled to unit norm with its largest entry real
        and positive.
    state_names : tuple of str
        The rows of ``shapes``.
    """

    eigenvalues: np.ndarray
    natural_frequencies: np.ndarray
    frequencies_hz: np.ndarray
    damping_ratios: np.ndarray
    shapes: np.ndarray
    state_names: tuple[str, ...]

    def shape(self, k: int) -> dict[str, complex]:
        """Mode ``k``'s shape by state name."""
        return {n: complex(v) for n, v in zip(self.state_names, self.shapes[:, k])}

    def table(self) -> str:
        """One line per mode: eigenvalue, frequency (rad/s, Hz), damping ratio and the
        state that dominates its shape."""
        lines = ["mode  eigenvalue (1/s)              omega_n (rad/s)   f (Hz)      zeta"
                 "      dominant state"]
        for k, lam in enumerate(self.eigenvalues):
            dom = self.state_names[int(np.argmax(np.abs(self.shapes[:, k])))] \
                if self.state_names else ""
            lines.append(f"{k:4d}  {lam.real:+.6e} {lam.imag:+.6e}j  "
                         f"{self.natural_frequencies[k]:.6e}  {self.frequencies_hz[k]:.4e}  "
                         f"{self.damping_ratios[k]:+.4f}   {dom}")
        return "\n".join(lines)


@dataclass(frozen=True)
class LinearModel:
    """A linear model about an operating point (x0, u0)::

        d(dx)/dt = A dx + B du          dx = x - x0, du = u - u0
        dy       = C dx + D du          dy = y - y0

    Attributes
    ----------
    A, B, C, D : ndarray
        Shapes (n, n), (n, m), (p, n), (p, m), in the units of the named states, inputs
        and outputs (SI: rad, m, N, N m, V, ..., per second for A and B).
    state_names, input_names, output_names : tuple of str
    x0 : ndarray (n,)
        The operating point's states.
    u0 : ndarray (m,)
        The operating point's inputs.
    y0 : ndarray (p,)
        The outputs there.
    xdot0 : ndarray (n,)
        dx/dt at the operating point: zero at an equilibrium. When it is not, the
        linear model holds about the point, not about a trajectory through it.
    t0 : float
        The time of the operating point (s).
    errors : mapping of str to ndarray
        The estimated absolute error of each entry of ``"A"``, ``"B"``, ``"C"`` and
        ``"D"`` (the finite differences' own estimate: the change of the Richardson
        extrapolation between its last two orders; rounding only for an exact method).
    method : str
        How the derivatives were obtained.
    notes : tuple of str
        What the linearisation left out or assumed (work states left out, inputs'
        rates taken as zero, ...).
    coordinates : tuple of (str, int, int)
        Second-order coordinates, where the model has them (a mechanism's joint
        coordinates): (name, the row of its position state, the row of its rate state);
        mode shapes are drawn in them. Empty for a first-order model.
    """

    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    D: np.ndarray
    state_names: tuple[str, ...]
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    x0: np.ndarray
    u0: np.ndarray
    y0: np.ndarray
    xdot0: np.ndarray
    t0: float = 0.0
    errors: Mapping[str, np.ndarray] = field(default_factory=dict)
    method: str = ""
    notes: tuple[str, ...] = ()
    coordinates: tuple[tuple[str, int, int], ...] = ()

    def __post_init__(self):
        for name in ("A", "B", "C", "D", "x0", "u0", "y0", "xdot0"):
            arr = np.array(getattr(self, name), dtype=float)
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        n, m, p = len(self.state_names), len(self.input_names), len(self.output_names)
        want = {"A": (n, n), "B": (n, m), "C": (p, n), "D": (p, m), "x0": (n,),
                "u0": (m,), "y0": (p,), "xdot0": (n,)}
        bad = [f"{k} has shape {getattr(self, k).shape}, expected {s}"
               for k, s in want.items() if getattr(self, k).shape != s]
        if bad:
            raise ModelError(f"LinearModel: {'; '.join(bad)} (for {n} states, {m} inputs, "
                             f"{p} outputs)")

    # -- sizes and names ----------------------------------------------------------------
    @property
    def n_states(self) -> int:
        return len(self.state_names)

    @property
    def n_inputs(self) -> int:
        return len(self.input_names)

    @property
    def n_outputs(self) -> int:
        return len(self.output_names)

    @property
    def max_error(self) -> float:
        """The largest estimated error of any entry of A, B, C, D."""
        return max((float(np.max(e, initial=0.0)) for e in self.errors.values()),
                   default=0.0)

    @property
    def equilibrium_residual(self) -> float:
        """max |dx/dt| at the operating point (0 at an equilibrium)."""
        return float(np.max(np.abs(self.xdot0), initial=0.0))

    def index(self, kind: str, name: str) -> int:
        """The position of state, input or output ``name`` (``kind`` "state", "input" or
        "output"); a ModelError naming the valid names otherwise."""
        names = {"state": self.state_names, "input": self.input_names,
                 "output": self.output_names}[kind]
        try:
            return names.index(name)
        except ValueError:
            raise ModelError(f"no {kind} named {name!r}{did_you_mean(name, names)}; "
                             f"{kind}s: {', '.join(names) or 'none'}") from None

    def __repr__(self) -> str:
        return (f"LinearModel({self.n_states} states, {self.n_inputs} inputs, "
                f"{self.n_outputs} outputs; max estimated error {self.max_error:.1e}; "
                f"|dx/dt| at the point {self.equilibrium_residual:.1e})")

    # -- analysis ------------------------------------------------------------------------
    def modes(self, *, require_equilibrium: bool = True, tol: float = 1e-8) -> Modes:
        """Eigenvalues, natural frequencies (rad/s and Hz), damping ratios and mode
        shapes of A.

        Parameters
        ----------
        require_equilibrium : bool
            Refuse an operating point that is not an equilibrium (modes about a point
            the system moves away from describe no oscillation about it).
        tol : float
            The largest |dx/dt| accepted as an equilibrium, relative to
            max(1, max |A dx| for unit dx).

        Raises
        ------
        ModelError
            Naming the states whose rates are not zero at the point.
        """
        if require_equilibrium:
            scale = max(1.0, float(np.abs(self.A).max(initial=0.0)))
            bad = np.flatnonzero(np.abs(self.xdot0) > tol * scale)
            if bad.size:
                worst = ", ".join(f"{self.state_names[i]} ({self.xdot0[i]:.3g}/s)"
                                  for i in bad[np.argsort(-np.abs(self.xdot0[bad]))][:5])
                raise ModelError(f"the operating point is not an equilibrium: dx/dt is not "
                                 f"zero for {worst}; find one with find_equilibrium (or "
                                 f"pass require_equilibrium=False for the eigenvalues of "
                                 f"A at this point)")
        lam, vec = np.linalg.eig(self.A) if self.n_states else \
            (np.zeros(0, complex), np.zeros((0, 0), complex))
        wn = np.abs(lam)
        order = np.lexsort((lam.real, np.round(wn, 12)))
        lam, vec, wn = lam[order], vec[:, order], wn[order]
        with np.errstate(invalid="ignore", divide="ignore"):
            zeta = np.where(wn > 0, -lam.real / np.where(wn > 0, wn, 1.0), np.nan)
        for k in range(vec.shape[1]):
            v = vec[:, k]
            i = int(np.argmax(np.abs(v)))
            v = v * (abs(v[i]) / v[i]) if v[i] != 0 else v
            vec[:, k] = v / max(np.linalg.norm(v), 1e-300)
        return Modes(lam, wn, wn / (2 * np.pi), zeta, vec, self.state_names)

    def transfer(self, input: str, output: str, s: Any) -> np.ndarray:
        """The transfer function from ``input`` to ``output``,
        C (sI - A)^-1 B + D, at the complex frequencies ``s`` (1/s; use 1j omega for the
        frequency response), in the output's unit per the input's."""
        i, o = self.index("input", input), self.index("output", output)
        s = np.asarray(s, dtype=complex)
        flat = s.ravel()
        out = np.empty(flat.size, dtype=complex)
        eye = np.eye(self.n_states)
        for k, sk in enumerate(flat):
            x = np.linalg.solve(sk * eye - self.A, self.B[:, i]) if self.n_states else \
                np.zeros(0)
            out[k] = self.C[o] @ x + self.D[o, i]
        return out.reshape(s.shape)

    def select(self, inputs: Sequence[str] | None = None,
               outputs: Sequence[str] | None = None) -> "LinearModel":
        """The same model with some inputs and outputs only (in the order given)."""
        ii = [self.index("input", n) for n in (self.input_names if inputs is None else inputs)]
        oo = [self.index("output", n) for n in (self.output_names if outputs is None
                                                 else outputs)]
        errs = {k: v for k, v in self.errors.items()}
        for k, rows, cols in (("B", None, ii), ("C", oo, None), ("D", oo, ii)):
            if k in errs:
                e = np.asarray(errs[k])
                e = e[rows] if rows is not None else e
                errs[k] = e[:, cols] if cols is not None else e
        return LinearModel(self.A, self.B[:, ii], self.C[oo], self.D[np.ix_(oo, ii)],
                           self.state_names, tuple(self.input_names[i] for i in ii),
                           tuple(self.output_names[o] for o in oo), self.x0, self.u0[ii],
                           self.y0[oo], self.xdot0, self.t0, errs, self.method, self.notes,
                           self.coordinates)

    def response(self, t: Sequence[float], du: Mapping[str, float] | None = None,
                 dx0: Mapping[str, float] | np.ndarray | None = None) -> np.ndarray:
        """The linear model's response dx(t) (shape (n_states, len(t))) to a constant
        input change ``du`` (by input name) from ``dx0`` (by state name or a vector),
        exactly (the matrix exponential of the augmented system [[A, B du], [0, 0]])."""
        from scipy.linalg import expm
        t = np.asarray(t, dtype=float)
        n = self.n_states
        x0 = np.zeros(n)
        if isinstance(dx0, Mapping):
            for k, v in dx0.items():
                x0[self.index("state", k)] = float(v)
        elif dx0 is not None:
            x0 = np.asarray(dx0, dtype=float).reshape(n)
        b = np.zeros(n)
        for k, v in (du or {}).items():
            b += self.B[:, self.index("input", k)] * float(v)
        M = np.zeros((n + 1, n + 1))
        M[:n, :n] = self.A
        M[:n, n] = b
        z0 = np.append(x0, 1.0)
        return np.column_stack([(expm(M * (tk - t[0])) @ z0)[:n] for tk in t]) if t.size \
            else np.zeros((n, 0))

    # -- interop -------------------------------------------------------------------------
    def to_control(self) -> Any:
        """This model as python-control's ``StateSpace`` (with the state, input and
        output names; python-control reserves '.' for subsystems, so each '.' of a name
        becomes '_': ``J1.q`` is ``J1_q`` there).

        Raises
        ------
        ImportError
            When python-control is not installed (the optional ``control`` extra:
            ``pip install 'vector-bondgraph[control]'`` or ``pip install control``).
        """
        control = require_extra("control", "LinearModel.to_control()", "control")
        labels = {}
        for kind, names in (("states", self.state_names), ("inputs", self.input_names),
                            ("outputs", self.output_names)):
            new = [n.replace(".", "_") for n in names]
            if len(set(new)) < len(new):
                raise ModelError(f"the {kind} {', '.join(names)} are not distinct for "
                                 f"python-control once '.' becomes '_'")
            labels[kind] = new
        return control.ss(self.A, self.B, self.C, self.D, **labels)

    def to_scipy(self) -> Any:
        """This model as ``scipy.signal.StateSpace`` (a continuous ``lti``; scipy keeps
        no names: they are this model's ``*_names``)."""
        from scipy.signal import StateSpace
        n, m, p = self.n_states, self.n_inputs, self.n_outputs
        # (scipy wants at least one state; a static gain has none)
        A = self.A if n else np.zeros((1, 1))
        B = self.B if n else np.zeros((1, m))
        C = self.C if n else np.zeros((p, 1))
        return StateSpace(A, B, C, self.D)

    def as_dict(self) -> dict[str, Any]:
        """Everything as plain lists and strings (what :meth:`write` puts in JSON)."""
        return {"states": list(self.state_names), "inputs": list(self.input_names),
                "outputs": list(self.output_names),
                **{k: getattr(self, k).tolist() for k in ("A", "B", "C", "D", "x0", "u0",
                                                          "y0", "xdot0")},
                "t0": self.t0, "method": self.method, "notes": list(self.notes),
                "errors": {k: np.asarray(v).tolist() for k, v in self.errors.items()},
                "max_error": self.max_error,
                "coordinates": [{"name": n, "position": i, "rate": j}
                                for n, i, j in self.coordinates]}

    def write(self, out_dir: str | os.PathLike, formats: Sequence[str] = FORMATS, *,
              stem: str = "linear") -> list[str]:
        """Write the matrices with their names into ``out_dir`` (created if missing):

        - CSV: ``<stem>_A.csv`` ... ``<stem>_D.csv`` (a header row of column names, each
          row led by its row name) and ``<stem>_point.csv`` (x0, u0, y0, xdot0 by name);
        - MAT: ``<stem>.mat`` with A, B, C, D, x0, u0, y0 and the names as cell arrays;
        - JSON: ``<stem>.json`` with everything (:meth:`as_dict`).

        Returns the paths written."""
        bad = [f for f in formats if f not in FORMATS]
        if bad:
            raise ModelError(f"unknown format(s) {', '.join(map(repr, bad))}; valid: "
                             f"{', '.join(FORMATS)}")
        os.makedirs(out_dir, exist_ok=True)
        paths = []
        rows_cols = {"A": (self.state_names, self.state_names),
                     "B": (self.state_names, self.input_names),
                     "C": (self.output_names, self.state_names),
                     "D": (self.output_names, self.input_names)}
        if "csv" in formats:
            for k, (rows, cols) in rows_cols.items():
                path = os.path.join(out_dir, f"{stem}_{k}.csv")
                M = getattr(self, k)
                lines = [",".join(["", *map(_csv, cols)])]
                lines += [",".join([_csv(r), *(repr(float(v)) for v in M[i])])
                          for i, r in enumerate(rows)]
                write_text(path, "\n".join(lines) + "\n")
                paths.append(path)
            path = os.path.join(out_dir, f"{stem}_point.csv")
            lines = ["kind,name,value"]
            for kind, names, vals in (("x0", self.state_names, self.x0),
                                      ("xdot0", self.state_names, self.xdot0),
                                      ("u0", self.input_names, self.u0),
                                      ("y0", self.output_names, self.y0)):
                lines += [f"{kind},{_csv(n)},{float(v)!r}" for n, v in zip(names, vals)]
            write_text(path, "\n".join(lines) + "\n")
            paths.append(path)
        if "mat" in formats:
            import scipy.io
            path = os.path.join(out_dir, f"{stem}.mat")
            cell = {k: np.array(list(v), dtype=object) for k, v in
                    (("state_names", self.state_names), ("input_names", self.input_names),
                     ("output_names", self.output_names))}
            with atomic_path(path, ".mat") as tmp:
                scipy.io.savemat(tmp, {"A": self.A, "B": self.B, "C": self.C, "D": self.D,
                                       "x0": self.x0, "u0": self.u0, "y0": self.y0,
                                       "xdot0": self.xdot0, "t0": self.t0, **cell})
            paths.append(path)
        if "json" in formats:
            path = os.path.join(out_dir, f"{stem}.json")
            write_text(path, json.dumps(self.as_dict(), indent=1))
            paths.append(path)
        return paths

    # -- plots ---------------------------------------------------------------------------
    def _pairs(self, pairs) -> list[tuple[str, str]]:
        if pairs is None:
            pairs = [(i, o) for i in self.input_names for o in self.output_names]
        out = []
        for p in pairs:
            if not (isinstance(p, Sequence) and len(p) == 2):
                raise ModelError(f"plot pairs are (input, output) name pairs, got {p!r}")
            self.index("input", p[0])
            self.index("output", p[1])
            out.append((str(p[0]), str(p[1])))
        if not out:
            raise ModelError("nothing to plot: the model has no input or no output")
        return out

    def bode_plot(self, path: str | os.PathLike,
                  pairs: Sequence[tuple[str, str]] | None = None,
                  omega: Sequence[float] | None = None) -> str:
        """A Bode plot (magnitude in dB and phase in degrees against rad/s) of the
        chosen (input, output) pairs (default: all), written as a PNG to ``path``."""
        pairs = self._pairs(pairs)
        if omega is None:
            wn = np.abs(np.linalg.eigvals(self.A)) if self.n_states else np.zeros(0)
            wn = wn[wn > 0]
            lo = np.log10(wn.min()) - 2 if wn.size else -2.0
            hi = np.log10(wn.max()) + 2 if wn.size else 2.0
            omega = np.logspace(lo, hi, 400)
        omega = np.asarray(omega, dtype=float)
        plt = pyplot("LinearModel.bode_plot")
        fig, (ax1, ax2) = plt.subplots(2, 1, sharex=True, figsize=(7, 6))
        for i, o in pairs:
            H = self.transfer(i, o, 1j * omega)
            with np.errstate(divide="ignore"):
                ax1.semilogx(omega, 20 * np.log10(np.abs(H)), label=f"{i} -> {o}")
            ax2.semilogx(omega, np.degrees(np.unwrap(np.angle(H))))
        ax1.set_ylabel("magnitude (dB)")
        ax2.set_ylabel("phase (deg)")
        ax2.set_xlabel("angular frequency (rad/s)")
        ax1.legend(fontsize=8)
        ax1.grid(True, which="both", alpha=0.3)
        ax2.grid(True, which="both", alpha=0.3)
        return _save(plt, fig, path)

    def step_plot(self, path: str | os.PathLike,
                  pairs: Sequence[tuple[str, str]] | None = None,
                  t: Sequence[float] | None = None) -> str:
        """The responses dy(t) to a unit step of each chosen input (pairs (input,
        output), default all), from the operating point, written as a PNG to ``path``."""
        pairs = self._pairs(pairs)
        if t is None:
            lam = np.linalg.eigvals(self.A) if self.n_states else np.zeros(0)
            slow = np.abs(lam.real[np.abs(lam) > 0])
            wn = np.abs(lam[np.abs(lam) > 0])
            end = 5.0 / slow.min() if slow.size and slow.min() > 0 else \
                (20 * np.pi / wn.min() if wn.size else 1.0)
            t = np.linspace(0.0, min(end, 1e6), 500)
        t = np.asarray(t, dtype=float)
        plt = pyplot("LinearModel.step_plot")
        fig, ax = plt.subplots(figsize=(7, 4))
        for i, o in pairs:
            x = self.response(t, {i: 1.0})
            k, j = self.index("output", o), self.index("input", i)
            ax.plot(t, self.C[k] @ x + self.D[k, j], label=f"{i} -> {o}")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("output change per unit input step")
        ax.legend(fontsize=8)
        ax.grid(True, alpha=0.3)
        return _save(plt, fig, path)


def _csv(name: str) -> str:
    """A name as a CSV field (quoted when it holds a comma or a quote)."""
    return f'"{name.replace(chr(34), chr(34) * 2)}"' if ("," in name or '"' in name) \
        else name


def _save(plt, fig, path) -> str:
    path = os.fspath(path)
    fig.tight_layout()
    try:
        with atomic_path(path, ".png") as tmp:
            fig.savefig(tmp, dpi=110, format="png")
    finally:
        plt.close(fig)
    return path

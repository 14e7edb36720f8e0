"""matplotlib, imported when a figure is drawn (it is an optional dependency).

- :func:`pyplot`: ``matplotlib.pyplot`` with the file backend (Agg) where a figure goes
  to a file, or a :class:`~bondgraph.errors.MissingExtraError` naming the ``plot`` extra.
- :func:`have_matplotlib`: whether it imports; :data:`NO_PLOTS`: the note of a run
  that skips its plots for want of it.
- :func:`panels_figure`: the quick-look figure of a result's ``plot()`` (panels over time).
"""

from __future__ import annotations

from typing import Any

from .errors import require_extra

__all__ = ["pyplot", "have_matplotlib", "NO_PLOTS", "panels_figure", "Panel"]

#: the note a run prints when it skips its plots for want of matplotlib
NO_PLOTS = ('matplotlib is not installed: no plots (pip install "vector-bondgraph[plot]" '
            'or pip install matplotlib)')


def pyplot(what: str, *, to_file: bool = True) -> Any:
    """``matplotlib.pyplot`` for ``what`` (named in the error when matplotlib is not
    installed); with ``to_file`` the Agg backend (no display needed)."""
    matplotlib = require_extra("matplotlib", what, "plot")
    if to_file:
        matplotlib.use("Agg")
    return require_extra("matplotlib.pyplot", what, "plot")


def have_matplotlib() -> bool:
    """Whether matplotlib imports here."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


#: one panel of a quick-look figure: (title, y-axis label, {legend label: series})
Panel = tuple[str, str, dict[str, Any]]


def panels_figure(t: Any, panels: list[Panel], *, title: str, what: str,
                  path: str | None = None, max_lines: int = 12) -> Any:
    """A quick-look figure: one panel per entry of ``panels`` stacked over a shared
    time axis (``t``, s), each with its title, y label and legend.

    With ``path`` the figure is drawn without pyplot (a user's interactive backend is
    left alone) and saved there (the suffix picks PNG, SVG or PDF); without, it comes
    from pyplot, so that a notebook shows it. A panel with more than ``max_lines``
    series draws the first ones and says so in its title. Returns the matplotlib
    ``Figure``.

    Raises
    ------
    MissingExtraError
        When matplotlib is not installed (naming the ``plot`` extra and ``what``).
    """
    if path is None:
        plt = pyplot(what, to_file=False)
        fig = plt.figure(figsize=(8.0, 2.6 * max(len(panels), 1)))
    else:
        require_extra("matplotlib", what, "plot")
        from matplotlib.figure import Figure
        fig = Figure(figsize=(8.0, 2.6 * max(len(panels), 1)))
    axes = fig.subplots(max(len(panels), 1), 1, sharex=True, squeeze=False)[:, 0]
    for ax, (name, ylabel, series) in zip(axes, panels):
        items = list(series.items())
        for label, y in items[:max_lines]:
            ax.plot(t, y, label=label)
        more = len(items) - max_lines
        ax.set_title(name + (f" (first {max_lines} of {len(items)})" if more > 0 else ""),
                     fontsize=10)
        ax.set_ylabel(ylabel)
        if items:
            ax.legend(fontsize=7, loc="best", ncol=2 if len(items) > 6 else 1)
        ax.grid(True, alpha=0.3)
    if not panels:
        axes[0].set_title("nothing to plot")
    axes[-1].set_xlabel("t (s)")
    fig.suptitle(title)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig

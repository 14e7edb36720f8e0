"""How models and results show in a notebook (``_repr_html_``).

- :func:`html_card`: a small HTML table (a title, then ``name | value`` rows, then notes
  such as what an import left out), every text escaped.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

__all__ = ["html_card"]


def html_card(title: str, rows: Iterable[tuple[str, object]],
              notes: Sequence[str] = (), *, status_ok: bool | None = None) -> str:
    """An HTML card: ``title`` (green when ``status_ok`` is True, red when False), a
    two-column table of ``rows`` and the ``notes`` as a list below it."""
    colour = {True: "#1a7f37", False: "#cf222e", None: "inherit"}[status_ok]
    cells = "".join(
        f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(str(k))}</th>"
        f"<td style='text-align:left'>{html.escape(str(v))}</td></tr>" for k, v in rows)
    notes_html = ("<ul>" + "".join(f"<li>{html.escape(str(n))}</li>" for n in notes)
                  + "</ul>") if notes else ""
    return (f"<div><strong style='color:{colour}'>{html.escape(title)}</strong>"
            f"<table>{cells}</table>{notes_html}</div>")

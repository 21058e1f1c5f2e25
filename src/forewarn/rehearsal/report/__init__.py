"""The rehearsal report as one self-contained HTML page (inline SVG, no script).

Jinja2 renders it; the pictures are SVG drawn by the template from geometry computed in
``charts.py``. No plotting library: the timeline (lanes of marks on a log time axis) is
not a stock chart type, and hand-made SVG keeps the page small, deterministic and
readable without JavaScript.
"""

from forewarn.rehearsal.report.render import render_report

__all__ = ["render_report"]

"""Render a ``ReactionReport`` to HTML with the package's Jinja2 template."""

from __future__ import annotations

import time
from functools import cache

import jinja2

from forewarn import __version__
from forewarn.rehearsal.grading import ReactionReport
from forewarn.rehearsal.report.charts import duration, histogram, timeline

__all__ = ["render_report"]


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("forewarn.rehearsal.report", "templates"),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html", "j2")),
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["utc"] = _utc
    env.filters["clock"] = _clock
    env.filters["duration"] = _duration
    return env


def _utc(at: float | None) -> str:
    if at is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at)) + f".{int(at % 1 * 10)} UTC"


def _clock(at: float | None) -> str:
    if at is None:
        return "-"
    return time.strftime("%H:%M:%S", time.gmtime(at)) + f".{int(at % 1 * 10)}"


def _duration(seconds: float | None) -> str:
    return "-" if seconds is None else duration(max(0.0, seconds))


def render_report(report: ReactionReport, *, title: str = "forewarn rehearsal report") -> str:
    """The whole report page."""
    charts = {e.id: timeline(e, report.generated_at) for e in report.events}
    return (
        _environment()
        .get_template("report.html.j2")
        .render(
            report=report,
            title=title,
            version=__version__,
            timelines=charts,
            detection=histogram(report.detection),
            approval=histogram(report.approval),
        )
    )

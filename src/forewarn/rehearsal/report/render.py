"""Render a ``ReactionReport`` to HTML with the package's Jinja2 template."""

from __future__ import annotations

import time
from functools import cache

import jinja2
import msgspec

from forewarn import __version__
from forewarn.rehearsal.bounded import EVENTS, NAMES, ROWS, SCOPE_ROWS
from forewarn.rehearsal.grading import ReactionReport
from forewarn.rehearsal.report.charts import Histogram, Timeline, duration, histogram, timeline
from forewarn.rehearsal.rollups import OPERATION_VERDICTS, OperationRollup, names
from forewarn.rehearsal.verdicts import EventVerdict

__all__ = ["FEW", "render_report"]

#: Rows of VMs or scopes the summary shows; more go in a collapsed drill-down.
FEW = 10


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
    env.filters["names"] = names
    env.globals["whole"] = _whole
    return env


def _whole(row: object, name: str) -> int:
    """How long a list of a verdict's row is: its whole length when ``bounded`` cut it."""
    trimmed: dict[str, int] = getattr(row, "trimmed", {})
    return trimmed.get(name, len(getattr(row, name)))


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


def _operation_timeline(
    op: OperationRollup, events: dict[str, EventVerdict], now: float
) -> Timeline | None:
    """One timeline for an operation: its events' VMs on the first event's axis (a
    rollout's later batches further right), worst lanes first."""
    mine = sorted((events[i] for i in op.events if i in events), key=lambda e: e.created_at or 0)
    if not mine:
        return None
    first = mine[0]
    started = [e.started_at for e in mine if e.started_at is not None]
    ended = [e.ended_at for e in mine if e.ended_at is not None]
    merged = msgspec.structs.replace(
        first,
        id=op.id,
        vms=[v for e in mine for v in e.vms],
        started_at=min(started, default=None),
        ended_at=max(ended, default=None) if op.ended_at is not None else None,
    )
    return timeline(merged, now)


def render_report(
    report: ReactionReport,
    *,
    title: str = "forewarn rehearsal report",
    histograms: tuple[Histogram, Histogram] | None = None,
) -> str:
    """The whole report page: a summary that fits a screen, then collapsed drill-down
    (one timeline per operation, every event, every VM; of a rolled-up ``report``, the
    rows it kept, each list counted in full). ``histograms``: the detection and approval
    latencies drawn (``charts.histogram``) of the verdict ``report`` was rolled up from
    (rolled up, its values are cut); by default ``report``'s own."""
    detection, approval = histograms or (histogram(report.detection), histogram(report.approval))
    events = {e.id: e for e in report.events}
    charts = {o.id: _operation_timeline(o, events, report.generated_at) for o in report.operations}
    kinds = sorted({o.kind for o in report.operations if o.kind})
    scopes = sorted({s.scope for o in report.operations for s in o.scopes})
    return (
        _environment()
        .get_template("report.html.j2")
        .render(
            report=report,
            title=title,
            version=__version__,
            timelines=charts,
            operation_verdicts=OPERATION_VERDICTS,
            few=FEW,
            kinds=kinds,
            scopes=scopes,
            detection=detection,
            approval=approval,
            rows=ROWS,
            names_kept=NAMES,
            events_kept=EVENTS,
            scope_rows_kept=SCOPE_ROWS,
        )
    )

"""``forewarn report``: the verdict on how the fleet reacted, from a running server.

The server grades (``GET /api/v1/reactions``, rolled up: the same size at any fleet;
``--vms`` and ``--all`` ask for the whole verdict, a row per VM; ``--junit`` asks for
every scope's events graded when the roll-up cut them, ``?scopes=event_scopes``) and
renders the HTML page (``GET /api/v1/report``); this command asks for them and prints,
saves or both.
"""

from __future__ import annotations

import math
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from forewarn.cli.api import control_client
from forewarn.cli.durations import DURATION
from forewarn.cli.errors import fail
from forewarn.cli.junit import report_cases, write_junit
from forewarn.cli.output import Column, print_json, table, when
from forewarn.cli.scope_pages import every_scope_row, pinned_params
from forewarn.contract.control_wire import PIN_PARAM, VERDICT_HEADER
from forewarn.contract.durations import parse_duration
from forewarn.controlapi import ControlRefused, read_answer

__all__ = ["parse_since", "report"]


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 10:
        return f"{value:.1f}s"
    if value < 120:
        return f"{value:.0f}s"
    if value < 7200:
        return f"{value / 60:.0f}m"
    return f"{value / 3600:.1f}h"


def parse_since(text: str, server_now: Any) -> float:
    """``--since``: a POSIX time, an ISO 8601 time (UTC unless it says), or a duration
    ago on the server's clock (``15m``: the server may run a virtual clock)."""
    value = text.strip()
    try:
        number = float(value)
    except ValueError:
        number = None
    if number is not None:
        if not math.isfinite(number) or number < 0:
            fail(f"--since {text!r} must be a time or a duration ago")
        return number
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        moment = None
    if moment is not None:
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.timestamp()
    try:
        ago = parse_duration(value, "--since")
    except ValueError:
        fail(
            f"--since {text!r} is neither a time (2026-11-25T22:00:00Z, or POSIX seconds) "
            "nor a duration ago (30s, 15m, 2h, 1d)"
        )
    return max(0.0, float(server_now()) - ago)


#: Seconds the report waits for the server's verdict: grading reads every fact of the
#: drill, about a minute after a region rollout over a million VMs (bench/RESULTS.md).
GRADING_TIMEOUT = 300.0

#: Operation verdicts, worst first (as the server ranks them).
OPERATION_VERDICTS = ("no-notice", "fail", "warn", "pending", "ok", "info")

#: Rows printed per roll-up table unless ``--all`` (the table says how many it hides).
LIMIT = 20
#: A table of VMs longer than this is rolled up by scope unless ``--vms`` or ``--all``
#: (so the report of a big fleet stays one screen, whatever its size).
FEW = 10


def _total(data: dict[str, Any], name: str) -> int:
    """How long a list of the verdict is: its whole length when the server cut it."""
    return int(data.get("trimmed", {}).get(name, len(data.get(name) or [])))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _names(vms: list[str], limit: int | None = 8, total: int | None = None) -> str:
    """Names, the first ``limit`` of them then how many more (None: every one) of
    ``total`` (the list's whole length when the server cut it)."""
    total = len(vms) if total is None else total
    if (limit is None or len(vms) <= limit) and total <= len(vms):
        return ", ".join(vms)
    shown = vms if limit is None else vms[:limit]
    return ", ".join(shown) + f" and {total - len(shown)} more"


def _progress(op: dict[str, Any], everything: bool, counted: bool = False) -> str:
    """An operation's progress line; with ``--all`` every VM named (from its parts), when
    ``counted`` (a big fleet's report) none: how many of each."""
    groups = op.get("groups")
    if groups is None or not (everything or counted):
        return str(op["progress"])
    if everything:
        named = [f"{len(g['vms'])} {g['label']}: {_names(g['vms'], None)}" for g in groups]
    else:
        cut = op.get("trimmed") or {}  # a rolled-up verdict names a few, counts them all
        named = [f"{cut.get('groups.' + g['label'], len(g['vms']))} {g['label']}" for g in groups]
    return ", ".join([*op.get("head", []), *named])


def _say(text: str) -> None:
    """A line of prose, wrapped to the terminal (80 columns when piped)."""
    width = Console().width
    click.echo(textwrap.fill(text, width=width, subsequent_indent="  ", break_on_hyphens=False))


def _capped(
    title: str, rows: list[list[str]], everything: bool, limit: int = LIMIT
) -> tuple[str, list[list[str]]]:
    """The rows to print and a title that says when some are left out (never silently)."""
    if everything or len(rows) <= limit:
        return title, rows
    return f"{title} (showing {limit} of {len(rows)}; --all lists every one)", rows[:limit]


def _headline(data: dict[str, Any], limit: int | None) -> None:
    """The verdict in two or three lines: operations and events by verdict, then the VMs
    hit with no notice (``limit``: how many are named)."""
    totals = data["totals"]
    op_totals = data.get("operation_totals", {})
    click.echo(
        f"{_plural(_total(data, 'operations'), 'operation')}: "
        + ", ".join(f"{op_totals.get(k, 0)} {k}" for k in OPERATION_VERDICTS)
    )
    click.echo(
        f"{_plural(_total(data, 'events'), 'event')}: "
        + ", ".join(f"{totals[k]} {k}" for k in ("ok", "warn", "fail", "pending", "info"))
    )
    if data.get("no_notice"):
        hit = data["no_notice"]
        _say(f"Hit with no notice: {_plural(_total(data, 'no_notice'), 'VM')}: "
             f"{_names(hit, limit, _total(data, 'no_notice'))}")  # fmt: skip


def _missed(events: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Each VM that missed an event: why, for each one it missed."""
    missed: dict[str, list[str]] = {}
    for e in events:
        for v in e["vms"]:
            if v["verdict"] == "missed":
                missed.setdefault(v["vm"], []).append(v["note"].partition(": ")[2] or v["note"])
    return missed


_TALLY_COLUMNS = [
    Column("VMs"), Column("failed"), Column("missed", optional=3), Column("no notice", optional=4),
    Column("never polled", optional=1), Column("stopped", optional=2),
]  # fmt: skip


_TALLIED = ("vms", "failed", "missed", "no_notice", "never_polled", "stopped_polling")


def _tally(row: dict[str, Any]) -> list[str]:
    return [str(row[k]) for k in _TALLIED]


def _print_rolled_up(data: dict[str, Any], wide: bool, everything: bool) -> None:
    """The VMs that need attention counted per region and scope kind, then per scope
    (the most first): what a big fleet's report shows instead of a row per VM."""
    kinds = data.get("by_kind") or []
    rows = [[k["region"], k["kind"], str(k["scopes"]), *_tally(k)] for k in kinds]
    columns = [Column("region", optional=5), Column("scope kind"), Column("scopes"),
               *_TALLY_COLUMNS]  # fmt: skip
    table("VMs that need attention, per scope kind (--vms lists each VM)", columns, rows,
          wide=wide)  # fmt: skip
    scopes = data.get("by_scope") or []
    rows = [[t["scope"], t["kind"], *_tally(t), t["first"]] for t in scopes]
    columns = [Column("scope", "key"), Column("kind", optional=6), *_TALLY_COLUMNS,
               Column("first VM", optional=5)]  # fmt: skip
    title = "... per scope, most first"
    whole = _total(data, "by_scope")  # the server keeps the first 50 of each kind
    rows = rows if everything else rows[:FEW]
    if len(rows) < whole:
        title = f"{title} (showing {len(rows)} of {whole}; --all lists every scope)"
    table(title, columns, rows, wide=wide)


def _print(data: dict[str, Any], wide: bool, everything: bool, per_vm: bool = False) -> None:
    """The report for a terminal: VM rows (``per_vm``, or ``everything``, or when each
    table of VMs is short), else those VMs counted per scope kind and scope."""
    events = data["events"]
    limit = None if everything else 8  # names in a line of prose
    operations = data.get("operations", [])
    failed = [v for v in data.get("vms", []) if v["first_failed_at"] is not None]
    missed = _missed(events)
    longest = max(len(failed), len(missed), _total(data, "stopped_polling"))
    cut = bool(data.get("trimmed"))  # the server rolled up a big verdict
    big = (longest > FEW or cut) and "by_scope" in data
    rolled = big and not (per_vm or everything)
    _headline(data, limit)
    if operations:
        rows = [
            [o["verdict"], when(o["created_at"]), o["kind"] or "-", o["target"] or "-",
             o.get("via") or "-", _progress(o, everything, counted=rolled)]
            for o in operations
        ]  # fmt: skip
        columns = [
            Column("verdict"), Column("created", optional=1), Column("operation"),
            Column("target"), Column("via", optional=2), Column("progress", "list"),
        ]  # fmt: skip
        title, rows = _capped("Operations", rows, everything, FEW if rolled else LIMIT)
        table(title, columns, rows, wide=wide)
    if rolled or (big and everything):  # --all: every scope (the whole verdict's rows)
        _print_rolled_up(data, wide, everything)
    if failed and not rolled:
        rows = [
            [v["vm"], v["verdict"], when(v["first_failed_at"]), v["polling"], v["lines"][0]]
            for v in failed
        ]
        columns = [
            Column("VM"), Column("verdict"), Column("failed", optional=2),
            Column("polling", optional=1), Column("first failure", "list"),
        ]  # fmt: skip
        title, rows = _capped("VMs that failed, earliest first", rows, everything)
        table(title, columns, rows, wide=wide)
    if events and (everything or _total(data, "events") <= LIMIT):
        rows = [
            [
                e["verdict"], when(e["created_at"]), e["id"], e["type"] or "-",
                e["scope"] or "-", _seconds(e["notice"]), e["status"], e["summary"],
            ]
            for e in events
        ]  # fmt: skip
        columns = [
            Column("verdict"), Column("created", optional=3), Column("event", "key"),
            Column("type"), Column("scope", optional=2), Column("notice", optional=1),
            Column("status", optional=4), Column("what happened", "list"),
        ]  # fmt: skip
        table("Events", columns, rows, wide=wide)
    elif events:
        _say(f"Events: {_total(data, 'events')} (--all lists each; --json --all and --html "
             "FILE --all hold every one)")  # fmt: skip
    if missed and not rolled:
        rows = [[vm, str(len(whys)), whys[0]] for vm, whys in missed.items()]
        columns = [Column("VM"), Column("events"), Column("why (its first miss)", "list")]
        title, rows = _capped("Missed", rows, everything)
        table(title, columns, rows, wide=wide)
    never = data.get("never_polled", [])
    if never:
        count = _total(data, "never_polled")
        _say(f"Never polled: {_plural(count, 'VM')} an event listed or an operation hit: "
             f"{_names(never, limit, count)}")  # fmt: skip
    if data["stopped_polling"] and not rolled:
        rows = [
            [p["vm"], when(p["last_poll"]), _seconds(p["silent_for"]), p["api_version"] or "-"]
            for p in data["stopped_polling"]
        ]
        columns = [Column("VM"), Column("last poll"), Column("silent"), Column("api-version")]
        title, rows = _capped("Stopped polling", rows, everything)
        table(title, columns, rows, wide=wide)
    if data["unlisted_approvals"]:
        rows = [[a["vm"], a["event_id"], when(a["at"])] for a in data["unlisted_approvals"]]
        columns = [Column("VM"), Column("event", "key"), Column("at")]
        title, rows = _capped("Approved events that do not list them", rows, everything)
        table(title, columns, rows, wide=wide)
    _print_faults(data, wide)
    _print_controllers(data, wide, everything)
    for name in ("detection", "approval"):
        stats = data[name]
        if stats["count"]:
            click.echo(
                f"{name} latency: {stats['count']} values, median {_seconds(stats['median'])}, "
                f"p90 {_seconds(stats['p90'])}, max {_seconds(stats['max'])}"
            )


def _print_faults(data: dict[str, Any], wide: bool) -> None:
    """How each VM coped with injected endpoint faults (``forewarn fault``), if any."""
    faults = data.get("faults") or []
    if faults:  # the note leads with the verdict and names missed events by short id
        rows = [[f["vm"], f["note"]] for f in faults]
        columns = [Column("VM"), Column("how it coped", "list")]
        table("Endpoint faults and how each VM coped", columns, rows, wide=wide)


def _print_controllers(data: dict[str, Any], wide: bool, everything: bool) -> None:
    """Each central controller (an Event Grid subscription), if events were sent to one."""
    controllers = data.get("controllers") or []
    for c in controllers:
        _say(f"Controller {c['subscription']} ({c['verdict']}): {c['summary']}")
    rows = [
        [r["verdict"], r["subscription"], r["event_id"], r["type"] or "-",
         _seconds(r["detected_after"]), _seconds(r["acknowledged_after"]), r["note"]]
        for c in controllers for r in c["events"]
    ]  # fmt: skip
    if rows:
        columns = [
            Column("verdict"), Column("subscription"), Column("event", "key"),
            Column("type", optional=2), Column("told", optional=1),
            Column("acknowledged", optional=3), Column("note", "list"),
        ]  # fmt: skip
        title, rows = _capped("Central controllers (Event Grid subscriptions)", rows, everything)
        table(title, columns, rows, wide=wide)


@click.command()
@click.option(
    "--since",
    default=None,
    help="Only events created since then: 2026-11-25T22:00:00Z, POSIX seconds, or a "
    "duration ago on the server's clock (30s, 15m, 2h, 1d).",
)
@click.option(
    "--stale-after",
    type=DURATION,
    default=30.0,
    help="A VM silent this long (the server's clock: 30, 30s, 2m) stopped polling.",
)
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the report as a self-contained HTML page (timelines, histograms; rolled "
    "up, --all or --vms: every row); the terminal gets only its headline.",
)
@click.option(
    "--junit",
    "junit_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write JUnit XML (for CI): a test case per operation and per event (over 100 "
    "events: per scope they were in, unless --vms); the terminal gets only the headline.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the verdict as JSON, rolled up (its lists of VMs cut short, each cut "
    "counted in 'trimmed'); with --vms or --all the whole verdict, a row per VM.",
)
@click.option(
    "--all", "everything", is_flag=True, help="Every row of every table (the whole verdict)."
)
@click.option(
    "--vms",
    "per_vm",
    is_flag=True,
    help=f"A row per VM in the tables of VMs (more than {FEW} are otherwise counted per "
    "scope kind and scope); the whole verdict for --json and --junit.",
)
@click.option(
    "--exit-code", is_flag=True, help="Exit 1 when a VM got no notice or an event failed."
)
@click.option("--wide", is_flag=True, help="Every column at full width.")
@click.pass_context
def report(
    ctx: click.Context,
    since: str | None,
    stale_after: float,
    html_file: Path | None,
    junit_file: Path | None,
    as_json: bool,
    everything: bool,
    per_vm: bool,
    exit_code: bool,
    wide: bool,
) -> None:
    """How the fleet reacted: each operation rolled up (VMs hit with no notice first),
    the VMs that failed first, each event (who saw it when, who approved it before
    NotBefore, who missed it), who never or no longer polls, approvals by VMs not listed.
    Many VMs in those tables are counted per scope kind and scope instead (``--vms``: a
    row each)."""
    api = control_client(ctx, timeout=GRADING_TIMEOUT)
    params: dict[str, Any] = {"stale_after": stale_after}
    if per_vm or everything:  # the whole verdict, a row per VM
        params["full"] = "true"
    if since is not None:
        params["since"] = parse_since(since, lambda: api.call("GET", "/api/v1/clock")["now"])
    more = html_file is not None or junit_file is not None  # asked again: pinned
    answer = api.response("GET", "/api/v1/reactions", params={**params, PIN_PARAM: more})
    data = read_answer(answer, api.base)
    # what else is read comes from that very verdict (with a real clock each request
    # would grade another: a minute at a million VMs, and the pages would not agree)
    pinned = pinned_params(params, answer.headers.get(VERDICT_HEADER))
    if html_file is not None:
        try:
            page = api.call("GET", "/api/v1/report", params=pinned)
        except ControlRefused as exc:  # let go meanwhile (410): the latest, then
            if exc.status != 410 or pinned is params:
                raise
            page = api.call("GET", "/api/v1/report", params=params)
        try:
            html_file.write_text(page, encoding="utf-8")
        except OSError as exc:
            fail(f"cannot write {html_file}: {exc.strerror or exc}")
    if junit_file is not None:
        per_event = per_vm or everything
        trimmed = data.get("trimmed", {})
        if not per_event and "events" in trimmed and "event_scopes" in trimmed:  # a case a scope
            rows = every_scope_row(api, pinned, data, "event_scopes")
            whole = {k: n for k, n in trimmed.items() if k != "event_scopes"}
            data_cases = {**data, "event_scopes": rows, "trimmed": whole}
        else:
            data_cases = data
        write_junit(junit_file, "forewarn rehearsal", report_cases(data_cases, per_event))
    files = [(what, f) for what, f in (("HTML report", html_file), ("JUnit XML", junit_file)) if f]
    if as_json:
        print_json(data)
    elif files:  # the report went to files: the terminal gets its headline, and where
        _headline(data, limit=8)
        for what, written in files:
            click.echo(f"{what} written to {written}")
    else:
        _print(data, wide, everything, per_vm)
    if exit_code and (data["totals"]["fail"] or data.get("no_notice")):
        ctx.exit(1)

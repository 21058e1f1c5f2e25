"""What the endpoint's VM commands do: ``forewarn watch``, ``forewarn discover``, and
``--url`` for ``forewarn events`` / ``forewarn approve`` (read or approve on a metadata
endpoint, real Azure or forewarn, instead of forewarn's control API).

Their options are ``forewarn.vm.parser``'s. Only the client and the contract, never the
emulator; a failure is a ``CommandError``, which ends as one error message.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from forewarn.client import ClientError, DocumentError, NotFoundError
from forewarn.vm.exits import CommandError, UsageProblem
from forewarn.vm.table import Column, render, styled, table
from forewarn.vm.text import fit, terminal_width

if TYPE_CHECKING:  # each command imports what it runs, no more (issue 31: start-up)
    from forewarn.client import (
        Document,
        DocumentChange,
        DocumentRecorder,
        Event,
        ScheduledEventsClient,
    )

__all__ = [
    "DELETED", "EVENT_COLUMNS", "approve_on_endpoint", "countdown", "event_rows",
    "show_discovery", "show_endpoint_events", "watch_endpoint", "wire_document",
]  # fmt: skip

CHANGE_LINES = 8
#: What ``watch`` says, once, when the endpoint answers 404: this VM is gone.
DELETED = "the platform deleted this VM (the endpoint answers 404: Preempt, Terminate or scale-in)"


def _client(
    url: str | None, source_address: str | None, api_version: str | None
) -> ScheduledEventsClient:
    """The blocking client (``api_version`` None: the client's default)."""
    from forewarn.client import DEFAULT_API_VERSION, ScheduledEventsClient

    api_version = api_version or DEFAULT_API_VERSION

    try:
        return ScheduledEventsClient(url, api_version=api_version, local_address=source_address)
    except (ClientError, ValueError) as exc:
        raise UsageProblem(str(exc)) from None


def _iso(moment: datetime | None) -> str:
    return "-" if moment is None else moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def countdown(event: Event, now: datetime) -> str:
    """``in 14m59s`` until NotBefore, ``due`` once it passed, ``started`` when Started."""
    if event.started:
        return "started"
    if event.not_before is None:
        return "-"
    left = int((event.not_before - now).total_seconds())
    if left <= 0:
        return "due"
    days, rest = divmod(left, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"in {days}d{hours:02d}h"
    if hours:
        return f"in {hours}h{minutes:02d}m"
    return f"in {minutes}m{seconds:02d}s" if minutes else f"in {seconds}s"


#: The document as a table (``events --url``, ``watch``): the id whole, the countdown with
#: NotBefore; a row that cannot stay whole on a line is a record (``--wide``: a row).
EVENT_COLUMNS = (
    Column("EventId", "key"),
    Column("Event", "phrase"),
    Column("NotBefore (UTC)", "phrase"),
    Column("Resources", "list"),
    Column("Source", optional=1),
    Column("Duration", optional=2),
)


def event_rows(document: Document | None, now: datetime) -> list[list[str]]:
    """One row of ``EVENT_COLUMNS`` per event."""
    rows = []
    for e in document.events if document else ():
        when = countdown(e, now)
        if e.not_before is not None and not e.started:
            when = f"{e.not_before.strftime('%Y-%m-%d %H:%M:%S')}\n{when}"  # its own line
        duration = "-" if e.duration_seconds < 0 else f"{e.duration_seconds}s"
        rows.append([e.event_id, f"{e.event_type} {e.status}", when, ", ".join(e.resources),
                     str(e.source), duration])  # fmt: skip
    return rows


def wire_document(document: Document) -> dict[str, Any]:
    """A typed document back in wire form (keys and order as the endpoint sends them)."""
    from forewarn.contract import format_rfc1123

    return {
        "DocumentIncarnation": document.incarnation,
        "Events": [
            {
                "EventId": e.event_id,
                "EventStatus": str(e.status),
                "EventType": str(e.event_type),
                "ResourceType": str(e.resource_type),
                "Resources": list(e.resources),
                "NotBefore": format_rfc1123(e.not_before.timestamp()) if e.not_before else "",
                "Description": e.description,
                "EventSource": str(e.source),
                "DurationInSeconds": e.duration_seconds,
                **dict(e.extra),
            }
            for e in document.events
        ],
        **dict(document.extra),
    }


# ---------------------------------------------------------------- events / approve --url


def show_endpoint_events(
    url: str, api_version: str | None, as_json: bool, source_address: str | None,
    wide: bool = False,
) -> None:  # fmt: skip
    """``forewarn events --url``: the document this machine gets from the endpoint."""
    with _client(url, source_address, api_version) as client:
        try:
            document = client.get()
        except ClientError as exc:
            raise CommandError(str(exc)) from None
    if as_json:
        print(json.dumps(wire_document(document), indent=2))
        return
    title = f"{client.url}: DocumentIncarnation {document.incarnation}"
    rows = event_rows(document, datetime.now(UTC))
    table(title, EVENT_COLUMNS, rows, wide=wide, records=True)


def approve_on_endpoint(
    url: str, event_ids: tuple[str, ...], api_version: str | None, source_address: str | None
) -> None:
    """``forewarn approve --url``: POST StartRequests for every id in one call, once the
    endpoint's document showed them (an HTML page, a truncated document or another
    service answers 200 to anything: only a document that lists the ids is the endpoint)."""
    if not all(event_id.strip() for event_id in event_ids):
        raise UsageProblem("event ids must be non-empty")
    with _client(url, source_address, api_version) as client:
        try:
            listed = {e.event_id.lower() for e in client.get().events}
        except DocumentError as exc:
            said = str(exc).removeprefix(f"{exc.url} ")  # "answered 200 with ..."
            raise CommandError(
                f"{client.url} is not a Scheduled Events endpoint: it {said} (nothing approved)"
            ) from None
        except ClientError as exc:
            raise CommandError(f"{exc} (nothing approved)") from None
        unknown = [i for i in event_ids if i.strip().lower() not in listed]
        if unknown:
            raise CommandError(
                f"not in the document of {client.url}: {', '.join(unknown)} (nothing approved)"
            )
        try:
            client.approve(*event_ids)
        except ClientError as exc:
            raise CommandError(str(exc)) from None
        except ValueError as exc:
            raise UsageProblem(str(exc)) from None
    print(fit(f"approved on {client.url}: {', '.join(event_ids)}"))


# ---------------------------------------------------------------- watch


class _View:
    """What ``watch`` shows: the latest document, this VM's events, recent changes."""

    def __init__(self, url: str, vm: str | None, width: int = 80, wide: bool = False) -> None:
        self.url = url
        self.vm = vm
        self.width = width
        self.wide = wide
        self.document: Document | None = None
        self.changes: deque[str] = deque(maxlen=CHANGE_LINES)
        self.problem: str | None = None
        self.lock = threading.Lock()

    def lines(self, change: DocumentChange, now: datetime) -> Iterator[str]:
        """Plain text for one change: one line per event added, updated or removed."""
        stamp = _iso(now)
        incarnation = change.document.incarnation
        if change.previous is None:
            count = len(change.document.events)
            yield f"{stamp} incarnation {incarnation}: {count} event{'s' * (count != 1)}"
        for kind, events in (("added", change.added), ("updated", change.updated),
                             ("removed", change.removed)):  # fmt: skip
            for e in events:
                mine = " [this VM]" if self.vm and e.affects(self.vm) else ""
                yield (
                    f"{stamp} incarnation {incarnation}: {kind} {e.event_id} {e.event_type} "
                    f"{e.status} NotBefore {_iso(e.not_before)} ({countdown(e, now)}) "
                    f"resources {','.join(e.resources)}{mine}"
                )

    def apply(self, change: DocumentChange, now: datetime) -> list[str]:
        with self.lock:
            self.document = change.document
            self.problem = None
            lines = list(self.lines(change, now))
            clock = now.strftime("%H:%M:%S")
            self.changes.extend(f"{clock} {line.split(' ', 1)[1]}" for line in lines)
            return lines

    def gone(self, now: datetime) -> str:
        """The VM was deleted: one line, kept with the changes."""
        line = f"{_iso(now)} {DELETED}"
        with self.lock:
            self.problem = DELETED
            self.changes.append(f"{now.strftime('%H:%M:%S')} {DELETED}")
        return line

    def render(self, on: bool = False) -> str:
        """The live view, re-drawn a few times a second so countdowns move (``on``: with
        styles, this VM's events in bold yellow)."""
        now = datetime.now(UTC)
        with self.lock:
            document, changes, problem = self.document, list(self.changes), self.problem
        who = f" as {self.vm}" if self.vm else ""
        title = f"Scheduled Events at {self.url}{who}"
        if document is not None:
            title += f" (DocumentIncarnation {document.incarnation})"
        events = document.events if document else ()
        styles = ["1;33" if self.vm and e.affects(self.vm) else None for e in events]
        rows = event_rows(document, now)
        text = render(title, EVENT_COLUMNS, rows, self.width, wide=self.wide, records=True,
                      styles=styles, on=on)  # fmt: skip
        notes = [("no events", "2")] if document is not None and not document.events else []
        notes += [(problem, "1;31")] if problem else []
        notes += [(line, "2") for line in changes]
        for note, style in notes:
            line = fit(note, self.width)
            text += (f"\x1b[{style}m{line}\x1b[0m" if on else line) + "\n"
        return text


class _Screen:
    """The live view on a terminal: each frame drawn over the last one (the cursor moved
    back up its lines), the cursor hidden meanwhile."""

    def __init__(self) -> None:
        self.height = 0

    def draw(self, frame: str) -> None:
        up = f"\x1b[{self.height}F" if self.height else ""
        sys.stdout.write(f"{up}\x1b[J{frame}")
        sys.stdout.flush()
        self.height = frame.count("\n")

    def __enter__(self) -> _Screen:
        sys.stdout.write("\x1b[?25l")
        return self

    def __exit__(self, *exc: object) -> None:
        sys.stdout.write("\x1b[?25h")
        sys.stdout.flush()


def _live(view: _View, follow: Callable[[Callable[[str], None]], None]) -> None:
    """Run ``follow`` (given how to report a problem) while a thread re-draws ``view``."""
    done = threading.Event()

    def problem(text: str) -> None:
        with view.lock:
            view.problem = text

    with _Screen() as screen:

        def redraw() -> None:
            while not done.wait(0.25):
                view.width = terminal_width()
                screen.draw(view.render(styled()))

        painter = threading.Thread(target=redraw, daemon=True)
        painter.start()
        try:
            follow(problem)
        finally:
            done.set()
            painter.join()
            screen.draw(view.render(styled()))


def _identity(client: ScheduledEventsClient, as_vm: str | None) -> str | None:
    if as_vm:
        return as_vm
    try:
        return client.instance().compute_name
    except ClientError:
        return None  # an endpoint without instance metadata: nothing is highlighted


def _follow(
    client: ScheduledEventsClient, interval: float, on_change: Callable[[DocumentChange], object],
    on_problem: Callable[[str], None], on_deleted: Callable[[], object],
    recorder: DocumentRecorder | None = None,
) -> None:  # fmt: skip
    """Watch until interrupted; after the first document, errors are reported, not fatal.

    A 404 means the platform deleted the VM: said once (``on_deleted``), then the watch
    goes on quietly (a rehearsal's ``fleet reset`` brings the VM back)."""
    known: Document | None = None
    deleted = False
    while True:
        try:
            for change in client.watch(interval, since=known, on_document=recorder):
                known, deleted = change.document, False
                on_change(change)
                if recorder is not None and recorder.error:
                    on_problem(recorder.error)
        except NotFoundError:
            if known is None:
                raise CommandError(DELETED) from None
            if not deleted:
                deleted = True
                on_deleted()
            time.sleep(interval)
        except ClientError as exc:
            if known is None:
                raise CommandError(str(exc)) from None
            on_problem(str(exc))
            time.sleep(interval)


def watch_endpoint(
    url: str | None, as_vm: str | None, interval: float, source_address: str | None,
    api_version: str | None, wide: bool, record_path: str | None,
) -> None:  # fmt: skip
    """``forewarn watch``: on a terminal a live table, otherwise a line per change."""
    from forewarn.client import DEFAULT_API_VERSION

    api_version = api_version or DEFAULT_API_VERSION
    with _client(url, source_address, api_version) as client:
        vm = _identity(client, as_vm)
        recorder: DocumentRecorder | None = None
        if record_path is not None:
            from forewarn.client import DocumentRecorder

            try:
                recorder = DocumentRecorder(record_path, api_version, vm)
            except OSError as exc:
                raise UsageProblem(f"--record {record_path}: {exc.strerror or exc}") from None
        view = _View(client.url, vm, 80, wide)
        try:
            if sys.stdout.isatty():  # a live table; a pipe gets plain lines
                _live(view, lambda problem: _follow(
                    client, interval, lambda c: view.apply(c, datetime.now(UTC)), problem,
                    lambda: view.gone(datetime.now(UTC)), recorder))  # fmt: skip
            else:

                def show(change: DocumentChange) -> None:
                    for line in view.apply(change, datetime.now(UTC)):
                        print(line)
                    sys.stdout.flush()

                def warn(text: str) -> None:
                    print(f"forewarn: warning: {text}", file=sys.stderr, flush=True)

                def gone() -> None:
                    print(view.gone(datetime.now(UTC)), flush=True)

                _follow(client, interval, show, warn, gone, recorder)
        except KeyboardInterrupt:
            return
        finally:
            if recorder is not None:
                recorder.close()


# ---------------------------------------------------------------- discover


def show_discovery(lease_files: tuple[str, ...], as_json: bool) -> None:
    """``forewarn discover``: the endpoint this VM would use, and why."""
    from forewarn.client import discover

    found = discover(lease_files or None)
    where = f" in {found.lease_file}" if found.lease_file else ""
    if as_json:
        data = {"url": found.url, "source": found.source,
                "lease_file": str(found.lease_file) if found.lease_file else None}  # fmt: skip
        print(json.dumps(data, indent=2))
        return
    if found.source == "default":
        how = "the default: no $FOREWARN_IMDS_URL, $SCHEDULEDEVENTSIP or DHCP option 245"
    else:
        how = f"from {found.source}{where}"
    print(fit(f"{found.url}  ({how})"))

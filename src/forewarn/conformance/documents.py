"""The document rules (CONTRACT section 2), checked on every document a run received.

Checks read the JSON as it came (a string incarnation is a finding, not something to
tolerate, unlike the client's parser) and the api-version it was asked for. Each returns
the problems it found, naming the version and the event; a rule about events is SKIP
while no document held one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from forewarn.conformance.results import Result, failed, passed, skipped
from forewarn.conformance.rules import NEWEST, rule
from forewarn.contract import (
    EVENT_KEYS,
    SUPPORTED_VERSIONS,
    ApiVersion,
    EventType,
    lookup_version,
)
from forewarn.contract.model import resource_matches

__all__ = ["CHECKS", "Sample", "check_documents", "problems_text"]

_GUID = re.compile(r"^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$")
_RFC1123 = re.compile(
    r"^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) "
    r"\d{4} \d{2}:\d{2}:\d{2} GMT$"
)
#: A cloud service's role instance (``FrontEnd_IN_0``): never underscored (D7).
_ROLE_INSTANCE = re.compile(r"_IN_\d+$")
_NO_EVENTS = "no document held an event: trigger one (az vm restart) and run again, or use --follow"
#: Fields that came with an api-version: name, the version flag.
_NEWER_FIELDS = (
    ("Description", "has_description"),
    ("EventSource", "has_event_source"),
    ("DurationInSeconds", "has_duration"),
)


@dataclass(frozen=True, slots=True)
class Sample:
    """One document received: the version asked for, the JSON as it came, its ETag."""

    version: str
    raw: dict[str, Any]
    body: bytes
    etag: str | None
    #: Fetched for R3.versions (every version back to back), not by another rule.
    each: bool = False

    @property
    def api(self) -> ApiVersion:
        found = lookup_version(self.version)
        assert found is not None
        return found

    def events(self) -> list[Any]:
        events = self.raw.get("Events")
        return events if isinstance(events, list) else []

    def incarnation(self) -> Any:
        return self.raw.get("DocumentIncarnation")


def _id(event: Any) -> str:
    if isinstance(event, dict) and isinstance(event.get("EventId"), str):
        return str(event["EventId"])
    return "<no EventId>"


def _each_event(samples: list[Sample]) -> Iterator[tuple[Sample, dict[str, Any] | Any]]:
    for sample in samples:
        for event in sample.events():
            yield sample, event


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _versions_text(versions: list[str]) -> str:
    named = list(dict.fromkeys(versions))
    return "every api-version" if set(named) == set(SUPPORTED_VERSIONS) else ", ".join(named)


def problems_text(problems: list[str], keep: int = 2) -> str:
    """The first ``keep`` problems, and how many more; one problem at several
    api-versions (``2019-04-01: ...``) is told once, naming them all."""
    versions: dict[str, list[str]] = {}
    for problem in problems:
        head, sep, rest = problem.partition(": ")
        if sep and lookup_version(head) is not None:
            versions.setdefault(rest, []).append(head)
        else:
            versions.setdefault(problem, [])
    unique = [f"{_versions_text(v)}: {p}" if v else p for p, v in versions.items()]
    text = "; ".join(unique[:keep])
    return text + (f" (and {len(unique) - keep} more)" if len(unique) > keep else "")


# ---- the checks: each yields problems


def _incarnation(samples: list[Sample], vm: str | None) -> Iterator[str]:
    for s in samples:
        value = s.incarnation()
        if not _is_int(value) or value < 0:
            yield f"{s.version}: DocumentIncarnation {value!r}"


def _one_counter(samples: list[Sample], vm: str | None) -> Iterator[str]:
    each = [s for s in samples if s.each]
    seen = {s.version: s.incarnation() for s in each}
    if len({repr(v) for v in seen.values()}) > 1:
        yield "incarnations by version: " + ", ".join(f"{k} {v!r}" for k, v in seen.items())


def _never_decreases(samples: list[Sample], vm: str | None) -> Iterator[str]:
    last: int | None = None
    for s in samples:
        value = s.incarnation()
        if not _is_int(value):
            continue
        if last is not None and value < last:
            yield f"{s.version}: DocumentIncarnation {value} after {last}"
        last = value if last is None else max(last, value)


def _key_order(samples: list[Sample], vm: str | None) -> Iterator[str]:
    for s in samples:
        keys = [k for k in s.raw if k in ("DocumentIncarnation", "Events")]
        if keys != ["DocumentIncarnation", "Events"]:
            yield f"{s.version}: document keys {list(s.raw)}"
        for event in s.events():
            if not isinstance(event, dict):
                continue
            known = [k for k in event if k in EVENT_KEYS]
            if known != sorted(known, key=EVENT_KEYS.index):
                yield f"{s.version}: event {_id(event)} keys {known}"


def _event_id(samples: list[Sample], vm: str | None) -> Iterator[str]:
    for s, event in _each_event(samples):
        value = event.get("EventId") if isinstance(event, dict) else None
        if not isinstance(value, str) or not _GUID.match(value):
            yield f"{s.version}: EventId {value!r}"


def _status(samples: list[Sample], vm: str | None) -> Iterator[str]:
    for s, event in _each_event(samples):
        value = event.get("EventStatus") if isinstance(event, dict) else None
        if value not in ("Scheduled", "Started"):
            yield f"{s.version}: event {_id(event)} EventStatus {value!r}"


def _types(samples: list[Sample], vm: str | None) -> Iterator[str]:
    newest = {s.incarnation(): s for s in samples if s.each and s.version == NEWEST}
    for s in samples:
        allowed = {str(t) for t in s.api.event_types}
        for event in s.events():
            value = event.get("EventType") if isinstance(event, dict) else None
            if value not in allowed:
                known = value in {str(t) for t in EventType}
                what = "newer than the version" if known else "not a documented type"
                yield f"{s.version}: event {_id(event)} EventType {value!r} ({what})"
        full = newest.get(s.incarnation())
        if s.each and full is not None and s is not full:
            wanted = {_id(e) for e in full.events() if isinstance(e, dict)
                      and e.get("EventType") in allowed}  # fmt: skip
            shown = {_id(e) for e in s.events()}
            if wanted != shown:
                yield (f"{s.version}: shows {sorted(shown)}, {NEWEST} shows {sorted(wanted)} "
                       "of the types it knows")  # fmt: skip


def _resource_type(samples: list[Sample], vm: str | None) -> Iterator[str]:
    for s, event in _each_event(samples):
        value = event.get("ResourceType") if isinstance(event, dict) else None
        if value != "VirtualMachine":
            yield f"{s.version}: event {_id(event)} ResourceType {value!r}"


def _resources(samples: list[Sample], vm: str | None) -> Iterator[str]:
    for s, event in _each_event(samples):
        value = event.get("Resources") if isinstance(event, dict) else None
        if not isinstance(value, list) or not all(isinstance(r, str) for r in value):
            yield f"{s.version}: event {_id(event)} Resources {value!r}"
            continue
        if vm is None:
            continue
        mine = [r for r in value if resource_matches(r, vm)]
        # 2017-03-01 underscores IaaS VMs, never a cloud service's role instances
        underscored = s.api.underscore_iaas_names and not _ROLE_INSTANCE.search(vm)
        if any(r.startswith("_") != underscored for r in mine):
            want = f"_{vm}" if underscored else vm
            yield f"{s.version}: event {_id(event)} names this VM {mine[0]!r}, not {want!r}"


def _not_before(samples: list[Sample], vm: str | None) -> Iterator[str]:
    for s, event in _each_event(samples):
        if not isinstance(event, dict):
            continue
        value = event.get("NotBefore")
        status = event.get("EventStatus")
        if status == "Started" and value != "":
            yield f"{s.version}: Started event {_id(event)} NotBefore {value!r}"
        elif status != "Started" and not (isinstance(value, str) and _RFC1123.match(value)):
            yield f"{s.version}: {status} event {_id(event)} NotBefore {value!r}"


def _field(name: str, good: Callable[[Any], bool], flag: str) -> Callable[..., Iterator[str]]:
    def check(samples: list[Sample], vm: str | None) -> Iterator[str]:
        for s, event in _each_event(samples):
            if not isinstance(event, dict) or not getattr(s.api, flag):
                continue
            if name not in event:
                yield f"{s.version}: event {_id(event)} has no {name}"
            elif not good(event[name]):
                yield f"{s.version}: event {_id(event)} {name} {event[name]!r}"

    return check


def _absent(samples: list[Sample], vm: str | None) -> Iterator[str]:
    for s, event in _each_event(samples):
        if not isinstance(event, dict):
            continue
        for name, flag in _NEWER_FIELDS:
            if not getattr(s.api, flag) and name in event:
                yield f"{s.version}: event {_id(event)} has {name} {event[name]!r}"


Check = Callable[[list[Sample], str | None], Iterator[str]]

#: Rule id → check, and whether the rule is about events (SKIP while there are none).
CHECKS: dict[str, tuple[Check, bool]] = {
    "D1.integer": (_incarnation, False),
    "D1.one-counter": (_one_counter, False),
    "D1.never-decreases": (_never_decreases, False),
    "D2.key-order": (_key_order, False),
    "D3.event-id": (_event_id, True),
    "D4.status": (_status, True),
    "D5.types": (_types, True),
    "D6.resource-type": (_resource_type, True),
    "D7.resources": (_resources, True),
    "D8.not-before": (_not_before, True),
    "D9.description": (_field("Description", lambda v: isinstance(v, str), "has_description"),
                       True),
    "D10.event-source": (_field("EventSource", lambda v: v in ("Platform", "User"),
                                "has_event_source"), True),
    "D11.duration": (_field("DurationInSeconds", lambda v: _is_int(v) and v >= -1,
                            "has_duration"), True),
    "D12.absent": (_absent, True),
}  # fmt: skip


def check_documents(samples: list[Sample], vm: str | None) -> list[Result]:
    """Every document rule's result over ``samples`` (in the order received)."""
    results = []
    any_event = any(s.events() for s in samples)
    for rule_id, (check, about_events) in CHECKS.items():
        r = rule(rule_id)
        if not samples:
            results.append(skipped(r, "no document was received"))
            continue
        if rule_id == "D1.one-counter" and not any(s.each for s in samples):
            results.append(skipped(r, "the api-versions were not fetched (--skip-probes)"))
            continue
        if about_events and not any_event:
            results.append(skipped(r, _NO_EVENTS))
            continue
        problems = list(check(samples, vm))
        if problems:
            results.append(failed(r, problems_text(problems)))
        else:
            events = sum(len(s.events()) for s in samples)
            results.append(passed(r, f"{len(samples)} documents, {events} event sightings"))
    return results

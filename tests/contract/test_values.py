"""The VM side's value classes (``forewarn.contract.values``) behave as the frozen, slotted
dataclasses they were: each is compared, on the same values, with its old definition."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from forewarn.client import Discovery, DocumentChange, RetryPolicy
from forewarn.contract import (
    ApiVersion,
    Document,
    Event,
    EventSource,
    EventStatus,
    EventType,
    Instance,
    ResourceType,
    lookup_version,
)
from forewarn.contract.model import EMPTY_EXTRA
from forewarn.contract.values import FrozenInstanceError

# ---------------------------------------------------------------- the old definitions

_dc = dataclasses.dataclass(frozen=True, slots=True)


@_dc
class OldEvent:
    event_id: str
    event_type: Any
    status: Any
    resource_type: Any = ResourceType.VIRTUAL_MACHINE
    resources: tuple[str, ...] = ()
    not_before: datetime | None = None
    description: str = ""
    source: Any = EventSource.PLATFORM
    duration_seconds: int = -1
    extra: Mapping[str, Any] = dataclasses.field(default_factory=lambda: EMPTY_EXTRA)

    def __hash__(self) -> int:
        return hash((self.event_id, self.event_type, self.status, self.resources, self.not_before))


@_dc
class OldDocument:
    incarnation: int
    events: tuple[Any, ...] = ()
    etag: str | None = None
    extra: Mapping[str, Any] = dataclasses.field(default_factory=lambda: EMPTY_EXTRA)

    def __hash__(self) -> int:
        return hash((self.incarnation, self.events, self.etag))


@_dc
class OldInstance:
    compute_name: str
    vm_id: str | None = None
    vm_scale_set_name: str | None = None
    platform_update_domain: int | None = None
    platform_fault_domain: int | None = None
    zone: str | None = None
    location: str | None = None
    raw: Mapping[str, Any] = dataclasses.field(default_factory=lambda: EMPTY_EXTRA, compare=False)

    def __hash__(self) -> int:
        return hash((self.compute_name, self.vm_id))


@_dc
class OldApiVersion:
    name: str
    event_types: frozenset[Any]
    underscore_iaas_names: bool = False
    has_description: bool = False
    has_event_source: bool = False
    has_duration: bool = False
    post_needs_metadata_header: bool = True


@_dc
class OldDocumentChange:
    document: Any
    added: tuple[Any, ...] = ()
    updated: tuple[Any, ...] = ()
    removed: tuple[Any, ...] = ()
    previous: Any = None

    def __bool__(self) -> bool:
        return bool(self.added or self.updated or self.removed)


@_dc
class OldRetryPolicy:
    gone_for: float = 70.0
    max_retries: int = 5
    backoff: float = 0.5
    backoff_max: float = 10.0
    gone_interval: float = 1.0


@_dc
class OldDiscovery:
    url: str
    source: str
    lease_file: Path | None = None


_NOW = datetime(2016, 9, 19, 18, 29, 47, tzinfo=UTC)
_EVENT_ARGS = ("A", EventType.REBOOT, EventStatus.SCHEDULED, ResourceType.VIRTUAL_MACHINE,
               ("vm-1", "vm-2"), _NOW, "text", EventSource.USER, 30, EMPTY_EXTRA)  # fmt: skip

#: Each class, its old definition, and argument lists to build both with (positional).
CASES: list[tuple[type, type, list[tuple[Any, ...]]]] = [
    (
        Event,
        OldEvent,
        [
            ("A", "Reboot", "Scheduled"),
            _EVENT_ARGS,
            ("a", "Future", "Started", "VirtualMachine", (), None, "", "Platform", -1, {"X": 1}),
        ],
    ),
    (Document, OldDocument, [(1,), (2, (Event(*_EVENT_ARGS),), '"e"'), (3, (), None, {"K": []})]),
    (
        Instance,
        OldInstance,
        [
            ("vm",),
            ("vm", "id", "set", 1, 2, "1", "westeurope", {"raw": 1}),
            ("vm",) + (None,) * 6 + ({"raw": 2},),
        ],
    ),
    (
        ApiVersion,
        OldApiVersion,
        [
            ("2017-03-01", frozenset({EventType.FREEZE}), True, False, False, False, False),
            ("x", frozenset()),
        ],
    ),
    (DocumentChange, OldDocumentChange, [(Document(1),), (Document(2), (Event("A", "R", "S"),))]),
    (RetryPolicy, OldRetryPolicy, [(), (1.0, 2, 0.0, 0.0, 0.5)]),
    (Discovery, OldDiscovery, [("http://a", "default"), ("http://b", "lease", Path("/l"))]),
]
IDS = [new.__name__ for new, _, _ in CASES]


def _outcome(action: Callable[..., object], *args: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        return ("value", action(*args, **kwargs))
    except Exception as exc:
        return (type(exc).__name__, str(exc))


@pytest.mark.parametrize(("new", "old", "arguments"), CASES, ids=IDS)
def test_built_alike(new: type, old: type, arguments: list[tuple[Any, ...]]) -> None:
    for args in arguments:
        ours, theirs = new(*args), old(*args)
        assert repr(ours) == repr(theirs).removeprefix("Old")
        assert hash(ours) == hash(theirs)
        assert bool(ours) == bool(theirs)
        names = [f.name for f in dataclasses.fields(theirs)]
        assert new.__match_args__ == old.__match_args__ == tuple(names)  # type: ignore[attr-defined]
        by_keyword = {name: getattr(theirs, name) for name in names}
        assert new(**by_keyword) == ours
        assert [getattr(ours, n) for n in names] == [getattr(theirs, n) for n in names]


@pytest.mark.parametrize(("new", "old", "arguments"), CASES, ids=IDS)
def test_equal_alike(new: type, old: type, arguments: list[tuple[Any, ...]]) -> None:
    for a in arguments:
        for b in arguments:
            assert (new(*a) == new(*b)) == (old(*a) == old(*b))
            assert (new(*a) != new(*b)) == (old(*a) != old(*b))
        assert new(*a) != old(*a)  # another class: never equal
        assert new(*a) != tuple(a)


@pytest.mark.parametrize(("new", "old", "arguments"), CASES, ids=IDS)
def test_frozen_alike(new: type, old: type, arguments: list[tuple[Any, ...]]) -> None:
    ours, theirs = new(*arguments[0]), old(*arguments[0])
    name = dataclasses.fields(theirs)[0].name
    for value in (ours, theirs):
        with pytest.raises(AttributeError, match=f"cannot assign to field '{name}'"):
            setattr(value, name, None)
        with pytest.raises(AttributeError, match=f"cannot delete field '{name}'"):
            delattr(value, name)
        assert not hasattr(value, "__dict__")
    with pytest.raises(FrozenInstanceError):
        setattr(ours, name, None)
    with pytest.raises(FrozenInstanceError):  # (3.11's slotted dataclass: a TypeError)
        ours.unknown = 1


@pytest.mark.parametrize(("new", "old", "arguments"), CASES, ids=IDS)
def test_wrong_arguments_refused_alike(
    new: type, old: type, arguments: list[tuple[Any, ...]]
) -> None:
    """The same TypeError, message and all, for every wrong call."""
    names: tuple[str, ...] = old.__match_args__  # type: ignore[attr-defined]
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((), {}),
        ((None,) * (len(names) + 1), {}),
        ((), {"nope": 1}),
        (arguments[-1], {names[0]: 1}),
    ]
    for args, kwargs in calls:
        ours, theirs = _outcome(new, *args, **kwargs), _outcome(old, *args, **kwargs)
        if theirs[0] == "value":  # all defaults (RetryPolicy())
            assert repr(ours[1]) == repr(theirs[1]).removeprefix("Old")
        else:
            assert ours == (theirs[0], theirs[1].removeprefix("Old"))


@pytest.mark.parametrize(("new", "old", "arguments"), CASES, ids=IDS)
def test_dataclasses_functions_work_alike(
    new: type, old: type, arguments: list[tuple[Any, ...]]
) -> None:
    """``fields``, ``replace``, ``asdict``, ``astuple`` and ``is_dataclass``, as users of
    the old classes may call them."""
    assert dataclasses.is_dataclass(new)
    for args in arguments:
        ours, theirs = new(*args), old(*args)
        assert dataclasses.is_dataclass(ours)
        mine, old_fields = dataclasses.fields(ours), dataclasses.fields(theirs)
        assert [(f.name, f.compare, f.init) for f in mine] == [
            (f.name, f.compare, f.init) for f in old_fields
        ]
        defaults = [f.default_factory() if callable(f.default_factory) else f.default
                    for f in old_fields]  # fmt: skip
        assert [f.default_factory() if callable(f.default_factory) else f.default
                for f in mine] == defaults  # fmt: skip
        for f in old_fields:
            changed = dataclasses.replace(ours, **{f.name: getattr(theirs, f.name)})
            assert type(changed) is new and changed == ours
        for convert in (dataclasses.asdict, dataclasses.astuple):
            assert _outcome(convert, ours) == _outcome(convert, theirs)


def _pickled(value: object) -> object:
    return pickle.loads(pickle.dumps(value))


@pytest.mark.parametrize(("new", "old", "arguments"), CASES, ids=IDS)
def test_copied_and_pickled_alike(new: type, old: type, arguments: list[tuple[Any, ...]]) -> None:
    for args in arguments:
        ours, theirs = new(*args), old(*args)
        assert copy.copy(ours) == ours
        for action in (copy.deepcopy, _pickled):
            mine, before = _outcome(action, ours), _outcome(action, theirs)
            assert mine[0] == before[0]  # "value" both, or the same error type
            if mine[0] == "value":
                assert mine[1] == ours


def test_matched_by_position_and_keyword() -> None:
    match Event(*_EVENT_ARGS):
        case Event("A", EventType.REBOOT, status=EventStatus.SCHEDULED, duration_seconds=30):
            pass
        case _:
            pytest.fail("no match")


def test_the_api_versions_are_values() -> None:
    version = lookup_version("2020-07-01")
    assert version is not None and version == dataclasses.replace(version)
    assert version.has_duration and EventType.TERMINATE in version.event_types


def test_the_policy_is_checked_on_replace_too() -> None:
    with pytest.raises(ValueError, match="max_retries must be >= 0"):
        dataclasses.replace(RetryPolicy(), max_retries=-1)

"""Event and Document helpers: matching VM names across versions."""

from __future__ import annotations

import pytest

from forewarn.contract import EVENT_KEYS, Document, Event, parse_document, resource_matches
from tests.contract.helpers import expected_keys, make_event, render
from tests.support.wire import VERSIONS


def _event(event_id: str, *resources: str, status: str = "Scheduled") -> Event:
    return Event(
        event_id=event_id,
        status=status,
        event_type="Reboot",
        resources=resources,
        not_before=None,
    )


def test_event_defaults() -> None:
    event = _event("A", "myvm")
    assert event.resource_type == "VirtualMachine"
    assert event.description == ""
    assert event.source == "Platform"
    assert event.duration_seconds == -1


@pytest.mark.parametrize(("status", "started"), [("Started", True), ("Scheduled", False)])
def test_started(status: str, started: bool) -> None:
    assert _event("A", "myvm", status=status).started is started


@pytest.mark.parametrize(
    ("resource", "vm_name", "matches"),
    [
        ("myvm", "myvm", True),
        ("_myvm", "myvm", True),
        ("MyVM", "myvm", True),
        ("_MYVM", "myVm", True),
        ("myvm", "MYVM", True),
        ("_myvm", "_myvm", True),
        ("FrontEnd_IN_0", "frontend_in_0", True),
        ("myvm2", "myvm", False),
        ("myvm", "myvm2", False),
        ("__myvm", "myvm", False),
        ("x_myvm", "myvm", False),
        ("", "myvm", False),
        ("_", "myvm", False),
    ],
)
def test_resource_matches(resource: str, vm_name: str, matches: bool) -> None:
    assert resource_matches(resource, vm_name) is matches
    assert _event("A", "other", resource).affects(vm_name) is matches


def test_for_vm_keeps_matching_events_in_order() -> None:
    document = Document(
        3,
        (_event("A", "_myvm"), _event("B", "other"), _event("C", "other", "MyVm"), _event("D")),
    )
    assert [e.event_id for e in document.for_vm("myvm")] == ["A", "C"]
    assert [e.event_id for e in document.for_vm("OTHER")] == ["B", "C"]
    assert document.for_vm("absent") == ()


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("vm_name", ["myvm", "MYVM", "MyVm"])
def test_for_vm_finds_the_vm_in_every_version(version: str, vm_name: str) -> None:
    body = render(version, [make_event(event_id="A"), make_event(event_id="B", resources=("x",))])
    assert [e.event_id for e in parse_document(body).for_vm(vm_name)] == ["A"]


def test_event_keys_are_the_newest_versions_keys_in_wire_order() -> None:
    assert list(EVENT_KEYS) == expected_keys(VERSIONS[-1])

"""Event, operation and rollout ids: the shapes clients see, unique, and in creation order
(the stores' indexes take them at their end, however many rows they hold: issue 17)."""

from __future__ import annotations

import re
import time
import uuid

from forewarn.fabric.ids import new_event_id, new_token
from tests.support.fabrics import DAY, fleet, make_fabric, submit

GUID = re.compile(r"[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}")


def test_event_ids_are_upper_case_guids_unique_and_later_ones_sort_after() -> None:
    first = [new_event_id() for _ in range(20_000)]
    time.sleep(0.002)  # the next millisecond
    later = new_event_id()
    assert all(GUID.fullmatch(i) for i in first)
    assert {uuid.UUID(i).variant for i in first} == {uuid.RFC_4122}
    assert len(set(first)) == len(first)
    assert later > max(first)


def test_tokens_are_12_hex_digits_each_higher_than_the_last() -> None:
    tokens = [new_token() for _ in range(20_000)]  # many in the same millisecond
    assert all(re.fullmatch(r"[0-9a-f]{12}", t) for t in tokens)
    assert tokens == sorted(tokens)
    assert len(set(tokens)) == len(tokens)


def test_a_fabric_names_operations_and_events_in_creation_order() -> None:
    fabric = make_fabric(fleet({"kind": "scale_set", "name": "ss", "vms": 50}))
    ops = []
    for i in range(50):
        ops.append(submit(fabric, "user-reboot", f"ss_{i}", notice_seconds=DAY))
        time.sleep(0.0015 if i % 10 == 0 else 0)  # some in the same millisecond, some not
    assert [op.id for op in ops] == sorted(op.id for op in ops)
    assert all(re.fullmatch(r"op-[0-9a-f]{12}", op.id) for op in ops)
    events = [e for op in ops for e in op.event_ids]
    assert all(GUID.fullmatch(e) for e in events)
    assert events[-1] > events[0]


def test_a_token_already_taken_is_drawn_again() -> None:
    """A wall clock stepped back across a restart may repeat a token: the operation still
    gets an id of its own."""
    repeats = iter(["00000000000a", "00000000000a", "00000000000a", "00000000000b"])
    spec = fleet({"kind": "availability_set", "name": "as", "vms": 4, "update_domains": 2})
    fabric = make_fabric(spec, new_token=lambda: next(repeats))
    first = submit(fabric, "user-reboot", "as-0", notice_seconds=DAY)
    second = submit(fabric, "user-reboot", "as-1", notice_seconds=DAY)
    assert (first.id, second.id) == ("op-00000000000a", "op-00000000000b")

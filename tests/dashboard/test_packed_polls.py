"""A tick's poll times, one byte per VM (``PollPacker``): what the page and the tests read
back is each VM's poll time to a twentieth of a second, and a fleet of 10,000 VMs that all
polled costs a stream some 13 KB a second instead of some 300 KB."""

from __future__ import annotations

import base64

import msgspec
import pytest

from forewarn.control.dashboard.stream_messages import AGE_STEP, PollPacker
from tests.dashboard.sse import poll_times

NOW = 1_800_000_000.0
FLEET = [f"vmss-{i:05d}" for i in range(10_000)]
ORDER = {name: i for i, name in enumerate(FLEET)}


def pack_polls(
    order: dict[str, int], moved: dict[str, float], now: float
) -> tuple[str, dict[str, float]]:
    """``moved`` packed as a tick gives it: (the bytes in base64, the times by name)."""
    packer = PollPacker(order, now)
    packer.add_moved(moved.items(), {})  # nothing sent before: every one moved
    return packer.packed(), packer.by_name


def test_every_vm_that_polled_reads_back_within_half_a_step() -> None:
    moved = {name: NOW - (i % 250) / 10 - 0.031 for i, name in enumerate(FLEET)}
    packed, by_name = pack_polls(ORDER, moved, NOW)
    assert by_name == {}
    assert len(base64.b64decode(packed)) == len(FLEET)
    read = poll_times({"now": NOW, "polled": packed, "polls": by_name}, FLEET)
    assert read.keys() == moved.keys()
    assert all(abs(read[name] - at) <= AGE_STEP / 2 for name, at in moved.items())
    # The point: a tick of the whole fleet is small (and a dict of it is not).
    assert len(packed) < 14_000
    assert len(msgspec.json.encode(moved)) > 20 * len(packed)


def test_only_the_vms_that_moved_are_set() -> None:
    moved = {"vmss-00003": NOW - 1.0, "vmss-09999": NOW}
    packed, by_name = pack_polls(ORDER, moved, NOW)
    ages = base64.b64decode(packed)
    assert [i for i, step in enumerate(ages) if step] == [3, 9999]
    assert (ages[3], ages[9999], by_name) == (11, 1, {})


def test_what_a_byte_cannot_say_goes_by_name() -> None:
    moved = {
        "vmss-00001": NOW - 25.4,  # the oldest a byte holds
        "vmss-00002": NOW - 25.5,  # older: from another front-end's shared poll times
        "elsewhere": NOW,  # not in the snapshot's order
        "vmss-00004": NOW + 0.5,  # a clock ahead: read as now
    }
    packed, by_name = pack_polls(ORDER, moved, NOW)
    assert by_name == {"vmss-00002": NOW - 25.5, "elsewhere": NOW}
    read = poll_times({"now": NOW, "polled": packed, "polls": by_name}, FLEET)
    assert read["vmss-00001"] == pytest.approx(NOW - 25.4)
    assert read["vmss-00004"] == NOW
    assert read["vmss-00002"] == NOW - 25.5


def test_nothing_moved_is_nothing_to_send() -> None:
    assert pack_polls(ORDER, {}, NOW) == ("", {})
    only_old = {"vmss-00001": NOW - 3600}
    assert pack_polls(ORDER, only_old, NOW) == ("", only_old)


def test_fed_in_slices_only_what_moved_since_the_last_tick() -> None:
    sent = {name: NOW - 5.0 for name in FLEET}
    polls = dict(sent) | {"vmss-00010": NOW - 0.5, "vmss-05000": NOW - 1.2}
    packer = PollPacker(ORDER, NOW)
    items = list(polls.items())
    for start in range(0, len(items), 1000):  # as a tick feeds it between turns of the loop
        packer.add_moved(items[start : start + 1000], sent)
    read = poll_times({"now": NOW, "polled": packer.packed(), "polls": packer.by_name}, FLEET)
    assert read == {"vmss-00010": pytest.approx(NOW - 0.5), "vmss-05000": pytest.approx(NOW - 1.2)}

"""A tick's poll times, one byte per VM (``pack_polls``): what the page and the tests read
back is each VM's poll time to a twentieth of a second, and a fleet of 10,000 VMs that all
polled costs a stream some 13 KB a second instead of some 300 KB."""

from __future__ import annotations

import base64

import msgspec
import pytest

from forewarn.control.dashboard.stream_messages import AGE_STEP, pack_polls
from tests.dashboard.sse import poll_times

NOW = 1_800_000_000.0
FLEET = [f"vmss-{i:05d}" for i in range(10_000)]
ORDER = {name: i for i, name in enumerate(FLEET)}


def test_every_vm_that_polled_reads_back_within_half_a_step() -> None:
    moved = {name: NOW - (i % 250) / 10 - 0.031 for i, name in enumerate(FLEET)}
    packed, by_name = pack_polls(ORDER, moved, NOW)
    assert by_name == {}
    assert len(base64.b64decode(packed)) == len(FLEET)
    read = poll_times({"now": NOW, "polled": packed, "polls": by_name}, FLEET)
    assert read.keys() == moved.keys()
    assert all(abs(read[name] - at) <= AGE_STEP / 2 for name, at in moved.items())
    # The point: a tick of the whole fleet is small (and a dict of it is not).
    assert len(packed) < 14_000 < 20 * 14_000 < len(msgspec.json.encode(moved))


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

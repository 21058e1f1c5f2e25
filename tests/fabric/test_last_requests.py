"""Each VM's last request as the fabric notes it: the same before and after the tracker
takes the requests since its last take (``Fabric.take_polled``), and each take holds only
what came since the one before."""

from __future__ import annotations

from forewarn.fabric import Clock, Fabric
from tests.support.fabrics import T0


def poll(fabric: Fabric, name: str) -> None:
    fabric.note_request(fabric.topology.vm(name))


def test_a_take_hands_over_the_polls_since_the_last_one_and_keeps_every_last_poll(
    fabric: Fabric, clock: Clock
) -> None:
    poll(fabric, "web-0")
    poll(fabric, "web-1")
    assert fabric.take_polled() == {"web-0": T0, "web-1": T0}
    assert fabric.take_polled() == {}
    assert dict(fabric.last_requests) == {"web-0": T0, "web-1": T0}

    clock.jump(5.0)
    poll(fabric, "web-1")
    poll(fabric, "web-2")
    assert fabric.last_requests["web-1"] == T0 + 5.0
    assert fabric.last_requests.get("web-0") == T0
    assert fabric.last_requests.get("web-3") is None
    assert "web-2" in fabric.last_requests and "web-3" not in fabric.last_requests
    assert len(fabric.last_requests) == 3
    # in the order of each VM's first poll, each with its last
    assert list(fabric.last_requests.copy().items()) == [
        ("web-0", T0), ("web-1", T0 + 5.0), ("web-2", T0 + 5.0)
    ]  # fmt: skip
    assert fabric.take_polled() == {"web-1": T0 + 5.0, "web-2": T0 + 5.0}
    assert fabric.last_requests.copy() == {"web-0": T0, "web-1": T0 + 5.0, "web-2": T0 + 5.0}

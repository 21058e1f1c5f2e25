"""The maintenance a user may start now (``az vm perform-maintenance``): a VM's platform
event while it is Scheduled, and nothing once it started or for a user's own operation."""

from __future__ import annotations

from forewarn.fabric import pending_maintenance
from tests.support.fabrics import make_fabric, only_event, submit


def test_a_scheduled_platform_event_is_pending_until_it_starts() -> None:
    fabric = make_fabric()
    try:
        assert pending_maintenance(fabric.events(), "jumpbox") is None
        submit(fabric, "user-reboot", "jumpbox")
        assert pending_maintenance(fabric.events(), "jumpbox") is None  # the user's own
        event = only_event(fabric, submit(fabric, "degraded-hardware", "web-1"))
        assert pending_maintenance(fabric.events(), "web-1") == event
        assert pending_maintenance(fabric.events(), "web-2") is None  # not on its list
        fabric.approve(fabric.topology.vms["web-1"], [event.id])
        assert pending_maintenance(fabric.events(), "web-1") is None  # started
    finally:
        fabric.close()

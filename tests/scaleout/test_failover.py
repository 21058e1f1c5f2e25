"""SIGKILL the leader in the middle of a rolling reboot: another process finishes it.

Three real processes on a real clock (time scale 300: 3 s notice, 2 s reboots). The six
VMs of availability set "web" poll the front-ends in turn, each sending the ETag it last
saw, and every other VM approves its events through whichever front-end it reaches. The
leader is killed once the rollout's second batch is scheduled. Then, from the history in
the database and from what each VM saw:

- another process leads within a few seconds, and the rollout completes;
- every VM is rebooted exactly once, every event goes scheduled → started → completed
  exactly once (none duplicated, none lost);
- no operation starts before its NotBefore unless every one of its events was approved,
  and every approval answered 200 is in the history;
- the incarnation and the events each VM saw never went back, whichever front-end
  answered, and each VM saw every event through to its end.

The VMs and these checks are shared with ``test_workers.py`` (``tests/scaleout/rollout.py``).
"""

from __future__ import annotations

import random
import signal
import threading
import time
from typing import Any

from tests.scaleout.fleet import Fleet
from tests.scaleout.rollout import (
    PollingVm,
    check_approvals_applied,
    check_history,
    check_what_each_vm_saw,
)
from tests.support.marks import SLOW
from tests.support.waiting import wait_until

pytestmark = SLOW

WEB = {f"web-{i}": f"127.1.0.{i + 1}" for i in range(6)}
APPROVERS = {"web-0", "web-2", "web-4"}
#: An approval sent this little before its NotBefore may reach the leader after it.
MOOT = 1.5
ARGS = ("--clock", "real", "--time-scale", "300", "--rate-limit", "0", "--enablement", "always")


def _vm(fleet: Fleet, name: str, address: str) -> PollingVm:
    """A VM asking the live front-ends in turn, approving through any of them."""

    def target(turn: int) -> tuple[int, str]:
        alive = fleet.alive()
        index = alive[turn % len(alive)]
        return index, fleet.servers[index].imds_url

    def approve_target(rng: random.Random) -> str:
        return fleet.servers[rng.choice(fleet.alive())].imds_url

    return PollingVm(name, address, target, approve_target, approves=name in APPROVERS)


def test_the_leader_dies_mid_rollout_and_another_process_finishes_it(
    start_fleet: Any,
) -> None:
    fleet: Fleet = start_fleet(3, ARGS)
    leader = fleet.wait_for_leader()
    old_epoch = fleet.cluster(leader)["epoch"]
    stop = threading.Event()
    vms = [_vm(fleet, name, address) for name, address in WEB.items()]
    threads = [threading.Thread(target=vm.run, args=(stop,), daemon=True) for vm in vms]
    for thread in threads:
        thread.start()
    try:
        created = fleet.control(
            fleet.followers()[0], "POST", "/api/v1/operations",
            json={"kind": "platform-reboot", "target": "web"},
        )  # fmt: skip
        assert created.status_code == 201, created.text
        rollout = created.json()["rollout_id"]

        def batches_created() -> int:
            ops = fleet.control(leader, "GET", "/api/v1/operations").json()
            return sum(1 for op in ops if op["rollout_id"] == rollout)

        wait_until(lambda: batches_created() >= 2, 30, "the second batch")
        killed_at = time.monotonic()
        fleet.servers[leader].kill(signal.SIGKILL)
        survivor = fleet.wait_for_leader(timeout=30)
        takeover = time.monotonic() - killed_at
        assert survivor != leader
        assert takeover < 10, f"took {takeover:.1f} s to elect a new leader"
        assert fleet.cluster(survivor)["epoch"] == old_epoch + 1

        fleet.wait_for_rollout(survivor, rollout)
        time.sleep(1.0)  # the VMs see the last removal
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)

    history = fleet.history(survivor)
    event_op = check_history(history, rollout, WEB.keys())
    check_what_each_vm_saw(vms, event_op.keys())
    check_approvals_applied(vms, history, moot_within=MOOT)
    for vm in vms:
        used = {poll.front_end for poll in vm.polls}
        assert len(used) >= 2, f"{vm.name} used one front-end only"
    assert any(vm.approved for vm in vms), {vm.name: vm.refused for vm in vms}

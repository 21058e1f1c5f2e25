"""``forewarn watch`` of a VM the platform deletes (spot eviction): said once, not a 404
warning every poll; a watch started on a deleted VM is one error line."""

from __future__ import annotations

import time
from collections.abc import Callable

from tests.support.cli import run_cli
from tests.support.serverproc import ServerProcess, trigger
from tests.vmcli.conftest import Running

DELETED = "the platform deleted this VM (the endpoint answers 404: Preempt, Terminate or scale-in)"


def _address(server: ServerProcess, vm: str) -> str:
    topology = server.control("GET", "/api/v1/topology").json()
    return next(v["address"] for s in topology["scopes"] for v in s["vms"] if v["name"] == vm)


def _evict(server: ServerProcess, vm: str) -> str:
    event_id = trigger(server, "spot-eviction", vm)
    for seconds in (30, 61):  # NotBefore, then the eviction's impact: the VM is gone
        server.control("POST", "/api/v1/clock/advance", json={"seconds": seconds})
    return event_id


def test_watch_says_once_that_the_vm_was_deleted(
    server: ServerProcess, running: Callable[..., Running]
) -> None:
    address = _address(server, "workers_0")
    watch = running("watch", "--url", server.imds_url, "--interval", "0.1",
                    "--source-address", address, "--as-vm", "workers_0")  # fmt: skip
    watch.expect("incarnation 1:")
    event_id = trigger(server, "spot-eviction", "workers_0")
    assert "Preempt Scheduled" in watch.expect(f"added {event_id}")
    for seconds in (30, 61):
        server.control("POST", "/api/v1/clock/advance", json={"seconds": seconds})
    assert watch.expect(DELETED).endswith(f"Z {DELETED}")
    time.sleep(2.0)  # twenty polls, all answered 404
    code, stderr = watch.interrupt()
    while not watch.lines.empty():
        watch.seen.append(watch.lines.get())
    assert (code, stderr) == (0, "")  # no "HTTP 404" warning per poll
    assert sum(DELETED in line for line in watch.seen) == 1


def test_watch_of_a_vm_already_deleted_is_one_error_line(server: ServerProcess) -> None:
    address = _address(server, "workers_1")
    _evict(server, "workers_1")
    result = run_cli(["watch", "--url", server.imds_url, "--source-address", address])
    assert result.assert_one_error_line() == f"forewarn: error: {DELETED}"

"""A leader frozen (SIGSTOP) for longer than a takeover, then thawed (SIGCONT).

Its kernel keeps its PostgreSQL sessions alive, so the lock alone would never pass on:
the followers see its heartbeat stop and end its sessions. The promise: another process
takes over; a change sent to the frozen leader is either refused (503) or made by the new
leader, never written under the old epoch once the new one has written; the change log's
epochs never go back; the thawed process steps down and follows, showing what the new
leader made.
"""

from __future__ import annotations

import random
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.scaleout.fleet import Fleet
from tests.scaleout.freezes import (
    Crowd,
    Rollouts,
    WatchingVm,
    check_documents,
    log_problems,
    rollout_history,
    thaw_health,
)
from tests.scaleout.pg import PgDatabase
from tests.scaleout.rollout import (
    PollingVm,
    check_approvals_applied,
    check_history,
    check_what_each_vm_saw,
)
from tests.support.marks import slow
from tests.support.waiting import wait_until


def _role(fleet: Fleet, index: int) -> str | None:
    try:
        response = fleet.control(index, "GET", "/api/v1/cluster", timeout=2)
    except httpx.HTTPError:
        return None
    return str(response.json()["role"]) if response.status_code == 200 else None


def _operations(fleet: Fleet, index: int) -> list[str]:
    response = fleet.control(index, "GET", "/api/v1/operations")
    assert response.status_code == 200, response.text
    return sorted(op["id"] for op in response.json())


@slow
def test_a_frozen_leader_is_replaced_and_its_writes_are_fenced_when_it_thaws(
    start_fleet: Callable[..., Fleet], pg: PgDatabase
) -> None:
    fleet = start_fleet(3)
    old = fleet.wait_for_leader()
    old_epoch = fleet.cluster(old)["epoch"]
    others = [i for i in range(3) if i != old]
    body = {"kind": "user-reboot", "target": "web-0"}
    assert fleet.control(old, "POST", "/api/v1/operations", json=body).status_code == 201
    frozen = fleet.servers[old].proc
    assert frozen is not None
    frozen.send_signal(signal.SIGSTOP)
    frozen_at = time.monotonic()
    late: list[Any] = []

    def send_to_the_frozen_leader() -> None:  # it answers only once thawed
        try:
            with httpx.Client(timeout=120, trust_env=False) as client:
                late.append(
                    client.post(
                        fleet.servers[old].control_url + "/api/v1/operations",
                        json={"kind": "user-reboot", "target": "web-1"},
                    )
                )
        except httpx.HTTPError as exc:
            late.append(exc)

    sender = threading.Thread(target=send_to_the_frozen_leader, daemon=True)
    try:
        sender.start()
        (new,) = wait_until(  # (index,): index 0 is a leader too
            lambda: [i for i in others if _role(fleet, i) == "leader"],
            60,
            "another process to take over from the frozen leader",
        )
        takeover = time.monotonic() - frozen_at
        assert fleet.cluster(new)["epoch"] > old_epoch
        made = fleet.control(new, "POST", "/api/v1/operations", json={**body, "target": "web-2"})
        assert made.status_code == 201, made.text
    finally:
        frozen.send_signal(signal.SIGCONT)
    sender.join(timeout=120)
    (answer,) = late
    wait_until(lambda: _role(fleet, old) == "follower", 30, "the thawed leader to step down")

    # The change log: once a newer epoch wrote, no entry of an older one follows.
    epochs = [int(str(e)) for (e,) in pg.execute("SELECT epoch FROM changes ORDER BY seq")]
    assert epochs == sorted(epochs), epochs
    assert epochs[-1] > old_epoch
    in_database = sorted(str(i) for (i,) in pg.execute("SELECT id FROM operations"))
    assert isinstance(answer, httpx.Response), answer
    if answer.status_code == 201:  # made by the new leader (forwarded once it stepped down)
        assert answer.json()["id"] in in_database
    else:  # refused: then it was not made anywhere
        assert answer.status_code == 503, answer.text
        assert len(in_database) == 2
    assert _operations(fleet, new) == in_database
    wait_until(lambda: _operations(fleet, old) == in_database, 15, "the thawed process to catch up")
    print(f"takeover after a freeze: {takeover:.1f} s; late change answered {answer.status_code}")


# ------------------------------------------------------------ mid-rollout

WEB = {f"web-{i}": f"127.1.0.{i + 1}" for i in range(6)}
APPROVERS = {"web-0", "web-2", "web-4"}
#: A real clock at scale 300 (3 s notice, 2 s reboots): the frozen leader's timers come
#: due while it is stopped, and fire the moment it thaws.
REAL = ("--clock", "real", "--time-scale", "300", "--rate-limit", "0", "--enablement", "always")
#: An approval sent this little before its NotBefore may reach the leader after it.
MOOT = 1.5
#: Deposed after 5 s of silence, then a takeover "within a second or so"
#: (docs/how-to/scale-out-postgresql.md); the bound is generous for a loaded machine.
TAKEOVER_BOUND = 15.0


def _rolling_vm(fleet: Fleet, out: set[int], name: str, address: str) -> PollingVm:
    """A VM asking the front-ends in turn, as a load balancer that takes a front-end out
    while it does not answer (``out``: the frozen one) and back as soon as it does; it
    approves half a second after it sees an event (during the freeze, for the batch
    that exists when the leader freezes)."""

    def serving() -> list[int]:
        return [i for i in fleet.alive() if i not in out]

    def target(turn: int) -> tuple[int, str]:
        live = serving()
        index = live[turn % len(live)]
        return index, fleet.servers[index].imds_url

    def approve_target(rng: random.Random) -> str:
        return fleet.servers[rng.choice(serving())].imds_url

    return PollingVm(
        name, address, target, approve_target, approves=name in APPROVERS, approve_delay=0.5
    )


@slow
def test_a_leader_frozen_mid_rollout_is_fenced_and_nothing_is_lost_or_done_twice(
    start_fleet: Callable[..., Fleet], pg: PgDatabase
) -> None:
    """Six VMs poll three front-ends (with ETags) and half of them approve while a
    platform reboot rolls over "web" on a real clock. The leader is SIGSTOPped once the
    second batch exists; while it is frozen, a VM's approval and a look at the cluster
    are sent to it (they wait in its kernel), and another VM of the batch approves
    through a follower (answered once recorded, for the next leader). Once another
    process leads, it is thawed and taken back by the VMs at once: its overdue timers
    fire as it wakes, queued requests are answered, yet it must not act as the leader:
    it never says it leads, no VM it answers sees an incarnation or an event go back,
    nothing it did under the old epoch follows the new one in the change log, every
    transition is recorded once, every approval made while nobody led (and every other
    one answered 200 but those that raced their NotBefore) is applied, and the rollout
    completes."""
    fleet = start_fleet(3, REAL)
    old = fleet.wait_for_leader()
    old_epoch = fleet.cluster(old)["epoch"]
    others = [i for i in range(3) if i != old]
    out: set[int] = set()  # the front-end the VMs leave alone
    vms = [_rolling_vm(fleet, out, name, address) for name, address in WEB.items()]
    stop = threading.Event()
    threads = [threading.Thread(target=vm.run, args=(stop,), daemon=True) for vm in vms]
    for thread in threads:
        thread.start()
    process = fleet.servers[old].proc
    assert process is not None
    late: dict[str, Any] = {}

    def ask_the_frozen_one(what: str, method: str, url: str, **kw: Any) -> threading.Thread:
        def send() -> None:  # answered only once it thaws
            try:
                with httpx.Client(timeout=60, trust_env=False, **kw.pop("client", {})) as c:
                    late[what] = c.request(method, url, **kw)
            except httpx.HTTPError as exc:
                late[what] = exc

        thread = threading.Thread(target=send, daemon=True)
        thread.start()
        return thread

    try:
        created = fleet.control(
            others[0], "POST", "/api/v1/operations",
            json={"kind": "platform-reboot", "target": "web"},
        )  # fmt: skip
        assert created.status_code == 201, created.text
        rollout = created.json()["rollout_id"]

        def second_batch() -> list[dict[str, Any]]:
            ops = fleet.control(old, "GET", "/api/v1/operations").json()
            mine = [op for op in ops if op["rollout_id"] == rollout]
            return mine if len(mine) >= 2 else []

        batch = max(wait_until(second_batch, 30, "the second batch"),
                    key=lambda op: op["created_at"])  # fmt: skip
        # every VM has seen the batch's events before the freeze: a poll caught in the
        # frozen process's kernel through the whole takeover would miss an event that
        # starts and ends meanwhile (one approved through a follower, below, does)
        wanted = set(batch["event_ids"])
        wait_until(lambda: all(wanted <= {e for p in list(vm.polls) for e, _ in p.events}
                               for vm in vms), 30, "every VM to see the second batch")  # fmt: skip
        out.add(old)
        process.send_signal(signal.SIGSTOP)
        frozen_at, frozen = time.monotonic(), [time.time()]  # wall: when nobody led
        silent = next(vm for vm in vms if vm.name in batch["vms"] and not vm.approves)
        approver = next(vm for vm in vms if vm.name in batch["vms"] and vm.approves)
        approval = {"StartRequests": [{"EventId": e} for e in batch["event_ids"]]}
        at_the_frozen_one = fleet.servers[old]
        asked = [
            ask_the_frozen_one(
                "approval", "POST", at_the_frozen_one.imds_url + "/metadata/scheduledevents",
                params={"api-version": "2020-07-01"}, headers={"Metadata": "true"},
                json=approval,
                client={"transport": httpx.HTTPTransport(local_address=approver.address)},
            ),
            ask_the_frozen_one("cluster", "GET", at_the_frozen_one.control_url + "/api/v1/cluster"),
        ]  # fmt: skip
        # a follower accepts an approval while nobody leads (recorded for the next leader)
        relayed = fleet.imds(others[1], silent.address, "POST", json=approval)
        assert relayed.status_code == 200, relayed.text
        try:
            (new,) = wait_until(
                lambda: [i for i in others if _role(fleet, i) == "leader"],
                60, "another process to take over from the frozen leader",
            )  # fmt: skip
            takeover = time.monotonic() - frozen_at
            frozen.append(time.time())
        finally:
            process.send_signal(signal.SIGCONT)
            out.discard(old)
        for thread in asked:
            thread.join(timeout=60)
        wait_until(lambda: _role(fleet, old) == "follower", 30, "the thawed leader to follow")

        fleet.wait_for_rollout(new, rollout)
        time.sleep(1.0)  # the VMs see the last removal
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)

    print(f"\ntakeover {takeover:.1f} s after the freeze; late answers {late}")
    assert takeover < TAKEOVER_BOUND, f"took {takeover:.1f} s to replace a frozen leader"
    assert fleet.cluster(new)["epoch"] > old_epoch
    cluster = late["cluster"]
    assert isinstance(cluster, httpx.Response), cluster
    if cluster.status_code == 200:  # it may say who leads, never that it does
        assert cluster.json()["role"] == "follower", cluster.json()
    else:
        assert cluster.status_code == 503, cluster.text
    history = fleet.history(new)
    approval = late["approval"]
    assert isinstance(approval, httpx.Response), approval
    assert approval.status_code in (200, 400, 503), approval.text
    if approval.status_code == 200:  # then its events were started
        started = {h["event_id"] for h in history if h["kind"] == "event.started"}
        assert set(batch["event_ids"]) <= started
    epochs = [int(str(e)) for (e,) in pg.execute("SELECT epoch FROM changes ORDER BY seq")]
    assert epochs == sorted(epochs), epochs
    event_op = check_history(history, rollout, WEB.keys())
    check_what_each_vm_saw(vms, event_op.keys())
    # strictly: approvals a follower accepted while nobody led wait for the new leader,
    # which applies them as of then, before the NotBefore timers that came due meanwhile
    waited = {e for vm in vms for e, at in vm.sent.items() if frozen[0] < at < frozen[1]}
    waited |= set(batch["event_ids"])
    approved = {h["event_id"] for h in history if h["kind"] == "event.approved"}
    assert waited <= approved, f"approvals made while nobody led were lost: {waited - approved}"
    for vm in vms:  # two VMs approved these: the one applied first is the approver
        for event_id in batch["event_ids"]:
            vm.approved.pop(event_id, None)
    check_approvals_applied(vms, history, moot_within=MOOT)
    thawed = [p for vm in vms for p in vm.polls if p.front_end == old and p.at > frozen_at]
    assert thawed, "no VM polled the thawed process"
    assert fleet.history(old) == history


# ------------------------------------------------------------ freeze after freeze

#: How long each round's process stays stopped: shorter and longer than the 5 s after
#: which the followers depose a silent leader (``STALE_LEADER_SECONDS``).
FREEZES = (3.0, 8.0, 4.0, 12.0, 6.0, 15.0, 3.5, 9.0, 5.5, 7.0) * 2
QUICK_FREEZES = (3.0, 8.0, 6.5)
#: Where in the rollout each freeze lands, in turn (``_moment``).
MOMENTS = ("scheduled", "started", "between", "any")
#: A thawed process answers /healthz 200 this soon after SIGCONT (as leader or follower).
HEALTHY_WITHIN = 3.0
#: "web" as in the demo fleet (127.1.0.1-6), and 40 more VMs in 8 scopes (127.1.0.7-46).
CROWDED_FLEET = """\
location: westeurope
hosts: 4
default_vm: web-0
scopes:
  - {kind: availability_set, name: web, update_domains: 3, fault_domains: 2, vms: 6}
  - {kind: scale_set, name: crowd, vms: 40, placement_groups: 8, update_domains: 2}
"""
CROWD = [f"127.1.0.{i}" for i in range(7, 47)]


def _moment(vms: list[WatchingVm], which: str, rng: random.Random) -> None:
    """Until the newest document any VM has shows an event ``which`` (or none, for
    "between" batches), then a little more; at most 20 s."""

    def reached() -> bool:
        newest = max((s for vm in vms for s in vm.seen[-3:]), key=lambda s: s.incarnation)
        statuses = {status for _, status in newest.events}
        if which == "between":
            return not statuses
        return which == "any" or which.capitalize() in statuses

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not reached():
        time.sleep(0.05)
    time.sleep(rng.uniform(0.0, 1.0))


def _freeze_after_freeze(
    start_fleet: Callable[..., Fleet], pg: PgDatabase, tmp_path: Path, freezes: tuple[float, ...]
) -> None:
    """Six VMs (three sending ETags) and a crowd of 40 ask all three front-ends at once,
    the frozen one too, while platform reboots of "web" follow each other on a real
    clock; round after round the leader (every fourth round a follower) is SIGSTOPped at
    a different moment of a rollout, for ``freezes[i]`` s, then SIGCONTed. Each thawed
    process answers /healthz 200 within 3 s, as the leader (if it still is) or a
    follower (``thaw_health``); no VM is ever shown a document
    older than one it had, whichever front-end answers; no poll is a 500; no write of an
    older epoch follows a newer one; every rollout's transitions happen once each and
    every approval answered 200 is applied; each process's log stays small, without a
    traceback or a message repeated over and over."""
    fleet_file = tmp_path / "crowded.yaml"
    fleet_file.write_text(CROWDED_FLEET)
    fleet = start_fleet(3, (*REAL, "--fleet", str(fleet_file)))
    fleet.wait_for_leader()
    rng = random.Random(40)
    frozen: set[int] = set()
    urls = [server.imds_url for server in fleet.servers]
    vms = [  # the approvers send ETags, the others do not
        WatchingVm(name, address, urls, approves=name in APPROVERS, etag=name in APPROVERS)
        for name, address in WEB.items()
    ]
    rollouts = Rollouts(fleet, "web", frozen)
    stop, stop_rollouts = threading.Event(), threading.Event()
    crowd = Crowd(CROWD, urls)
    threads = [t for vm in vms for t in vm.threads(stop)] + crowd.threads(stop)
    rolling = threading.Thread(target=rollouts.run, args=(stop_rollouts,), daemon=True)
    threads.append(rolling)
    for thread in threads:
        thread.start()
    rounds: list[str] = []
    late: list[int] = []
    windows: list[tuple[float, float]] = []  # each round's freeze to its thaw's health
    try:
        wait_until(lambda: rollouts.started, 30, "the first rollout")
        for number, seconds in enumerate(freezes):
            leader = fleet.wait_for_leader(timeout=60)
            index = leader if number % 4 != 3 else (leader + 1) % 3
            role = "leader" if index == leader else "follower"
            _moment(vms, MOMENTS[number % len(MOMENTS)], rng)
            process = fleet.servers[index].proc
            assert process is not None
            frozen.add(index)
            process.send_signal(signal.SIGSTOP)
            try:
                time.sleep(seconds)
            finally:
                process.send_signal(signal.SIGCONT)
                thawed_at = time.monotonic()
                frozen.discard(index)
            took = thaw_health(fleet.servers[index].control_url, thawed_at, 30)
            now = _role(fleet, index)
            windows.append((thawed_at - seconds, time.monotonic() + 1.0))
            rounds.append(
                f"round {number}: {role} {index} stopped {seconds:g} s at "
                f"{MOMENTS[number % len(MOMENTS)]}: healthy "
                f"{'never' if took is None else f'{took:.2f} s'} after SIGCONT, now {now}"
            )
            if took is None or took > HEALTHY_WITHIN:
                late.append(number)
        stop_rollouts.set()
        rolling.join(timeout=30)  # a rollout it was starting is in rollouts.started now
        leader = fleet.wait_for_leader(timeout=60)
        if rollouts.started:
            fleet.wait_for_rollout(leader, rollouts.started[-1], timeout=90)
        time.sleep(1.0)  # the VMs see the last removal
    finally:
        stop.set()
        stop_rollouts.set()
        for server in fleet.servers:
            if server.proc is not None and server.proc.poll() is None:
                server.proc.send_signal(signal.SIGCONT)
        for thread in threads:
            thread.join(timeout=60)
        for i, server in enumerate(fleet.servers):  # kept with the test's files
            (tmp_path / f"front-end-{i}.log").write_text("\n".join(server.banner) + "\n")

    print("\n" + "\n".join(rounds))
    print({vm.name: dict(vm.failures) for vm in vms}, dict(rollouts.refused), crowd.answers)
    problems = {i: log_problems(s.banner, max_bytes=4000 * (len(freezes) + 10),
                                max_repeats=3 * len(freezes) + 10)
                for i, s in enumerate(fleet.servers)}  # fmt: skip
    backwards = [(at, f"{vm.name}: {what}") for vm in vms for at, what in check_documents(vm)]
    spoilt = {n for n, (a, b) in enumerate(windows) for at, _ in backwards if a <= at <= b}
    failed = len(spoilt | set(late))
    print(f"rounds where a VM was shown an older document: {sorted(spoilt)}; rounds not "
          f"healthy in time: {late}; {failed} of {len(freezes)} failed")  # fmt: skip
    assert not backwards, [what for _, what in sorted(backwards)[:10]]
    assert not late, (
        f"not healthy within {HEALTHY_WITHIN} s of SIGCONT: {[rounds[n] for n in late]}"
    )
    five_hundreds = {vm.name: n for vm in vms for f, n in vm.failures.items() if "HTTP 500" in f}
    assert not five_hundreds, five_hundreds
    assert not crowd.answers["HTTP 500"], crowd.answers
    assert not any(problems.values()), problems
    epochs = [int(str(e)) for (e,) in pg.execute("SELECT epoch FROM changes ORDER BY seq")]
    assert epochs == sorted(epochs), "a write of an older epoch followed a newer one"
    history = fleet.history(leader)
    operations = fleet.control(leader, "GET", "/api/v1/operations").json()
    for rollout in rollouts.started:
        rollout_history(history, operations, rollout, list(WEB))
    check_approvals_applied(vms, history, moot_within=MOOT)  # type: ignore[arg-type]
    assert any(vm.approved for vm in vms)


def test_a_front_end_frozen_again_and_again_mid_rollout_never_shows_an_older_document(
    start_fleet: Callable[..., Fleet], pg: PgDatabase, tmp_path: Path
) -> None:
    """Three rounds of ``_freeze_after_freeze`` (the quick run)."""
    _freeze_after_freeze(start_fleet, pg, tmp_path, QUICK_FREEZES)


@slow
def test_twenty_freezes_in_a_row_mid_rollout_never_show_an_older_document(
    start_fleet: Callable[..., Fleet], pg: PgDatabase, tmp_path: Path
) -> None:
    """Twenty rounds of ``_freeze_after_freeze``, 3-15 s each (issue 40's bar)."""
    _freeze_after_freeze(start_fleet, pg, tmp_path, FREEZES)

"""A leader and a follower fabric on one PostgreSQL database, in one process.

The leader writes through the store; the follower runs the real replicator (LISTEN on the
change log) and relays approvals through the real ``approval_requests`` table. What the
follower shows must be exactly what the leader made durable, with the same incarnations.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest
import structlog.testing

from forewarn.contract import EventStatus
from forewarn.fabric import (
    Clock,
    EventRecord,
    Fabric,
    FabricError,
    OperationRequest,
    StoreUnavailable,
)
from forewarn.fleet import fleet_from_builtins
from forewarn.imds import Endpoint, ImdsSettings, Request
from forewarn.imds.endpoint import CATCH_UP_SECONDS
from forewarn.server.cluster.postgres_relay import (
    SLICE,
    PostgresRelay,
    apply_in_time,
    apply_requests,
)
from forewarn.server.cluster.replication import Replicator
from forewarn.store import ThreadedJournal
from forewarn.store.postgres import PostgresStore
from forewarn.store.postgres_cluster import ClusterTables, ScopeRequest
from tests.scaleout.pg import PgDatabase
from tests.support.fabrics import MINUTE, T0, live, make_fabric, observable, submit


@dataclass
class Pair:
    leader: Fabric
    follower: Fabric
    replicator: Replicator
    tables: ClusterTables
    relay: PostgresRelay
    stores: list[PostgresStore]
    reloads: list[int] = field(default_factory=list)
    task: asyncio.Task[None] | None = None

    def start(self, *, reload_first: bool = False) -> None:
        self.task = asyncio.create_task(self.replicator.run(reload_first=reload_first))

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await self.task
            self.task = None

    async def synced(self, timeout: float = 20.0) -> None:
        """Wait until the follower applied everything the leader wrote."""
        head = self.stores[0].head
        assert await self.replicator.wait_applied(head, timeout), (head, self.replicator.applied)


@pytest.fixture
async def pair(pg: PgDatabase) -> AsyncIterator[Callable[..., Pair]]:
    made: list[Pair] = []

    def make(**config: Any) -> Pair:
        config.setdefault("enablement", "always")
        leader_store, follower_store = PostgresStore(pg.url), PostgresStore(pg.url)
        leader = make_fabric(store=leader_store, clock=Clock.virtual(start=T0), **config)
        follower = make_fabric(store=follower_store, clock=Clock.virtual(start=T0), **config)
        tables = ClusterTables(follower_store)
        relay = PostgresRelay(tables, "follower-1")
        follower.follow(relay)
        reloads: list[int] = []
        replicator = Replicator(follower, follower_store, on_reload=lambda: reloads.append(1))
        made.append(
            Pair(
                leader, follower, replicator, tables, relay, [leader_store, follower_store], reloads
            )
        )
        return made[-1]

    yield make
    for item in made:
        await item.stop()
        for store in item.stores:
            store.close()


async def test_a_follower_shows_exactly_what_the_leader_made_durable(
    pair: Callable[..., Pair],
) -> None:
    p = pair()
    p.start()
    leader = p.leader
    reboot = live(leader, submit(leader, "user-reboot", "web-0"))[0]
    leader.approve(leader.topology.vm("web-3"), [reboot.id])
    submit(leader, "host-update", host="host-3")
    evicted = live(leader, submit(leader, "spot-eviction", "workers_1"))[0]
    leader.start_event(evicted.id)
    leader.submit(OperationRequest(kind="platform-reboot", scope="shop"))
    leader.advance(MINUTE)  # the eviction completes: workers_1 is deleted
    await p.synced()
    assert observable(p.follower, history=False) == observable(leader, history=False)
    assert p.follower.clock.now() == leader.clock.now()  # a virtual clock follows the leader's
    assert p.follower.is_deleted("workers_1")
    assert p.follower.view("web").incarnation == leader.view("web").incarnation > 2
    leader.advance(20 * MINUTE)
    await p.synced()
    assert observable(p.follower, history=False) == observable(leader, history=False)
    assert p.reloads == []


async def test_a_follower_changes_nothing_itself(pair: Callable[..., Pair]) -> None:
    p = pair()
    follower = p.follower
    with pytest.raises(StoreUnavailable, match="follows the fleet's leader"):
        submit(follower, "user-reboot", "web-0")
    submit(p.leader, "user-reboot", "web-0")
    p.leader.clock.jump(3600)  # due on the leader, which has not fired it yet
    follower.clock.jump(3600)
    assert follower.run_due() == 0 and follower.view("web").incarnation == 1
    assert p.stores[1].head == 0  # the follower's store wrote nothing


async def test_an_approval_on_a_follower_is_recorded_then_applied_once(
    pair: Callable[..., Pair],
) -> None:
    p = pair()
    p.start()
    event = live(p.leader, submit(p.leader, "user-reboot", "web-0"))[0]
    await p.synced()
    vm = p.follower.topology.vm("web-4")
    p.follower.approve(vm, [event.id.lower()])
    assert p.follower.writes_in_flight() == 1
    await p.follower.durable()  # recorded: a 200 can go out now
    p.follower.approve(vm, [event.id])  # the VM retries: recorded twice
    await p.follower.durable()
    assert len(p.tables.pending()[0]) == 2
    assert await apply_requests(p.leader, p.tables) == 2
    assert p.tables.pending() == ([], [])
    await p.synced()
    started = p.follower.event(event.id)
    assert started.status is EventStatus.STARTED and started.approved_by == "web-4"
    history = [h.kind for h in p.leader.history(event_id=event.id)]
    assert history.count("event.approved") == 1 and history.count("event.started") == 1


async def test_approvals_that_waited_while_nobody_led_count_as_of_when_they_were_made(
    pair: Callable[..., Pair],
) -> None:
    """A leader frozen (or dead) past a NotBefore: the approval a follower recorded before
    it is applied by the new leader as of then, before the timer; one recorded after the
    NotBefore passed changes nothing (the event started at its NotBefore)."""
    p = pair()
    p.start()
    early = live(p.leader, submit(p.leader, "user-reboot", "web-0"))[0]
    late = live(p.leader, submit(p.leader, "user-reboot", "web-1"))[0]
    await p.synced()
    not_before = early.not_before
    assert not_before is not None and late.not_before == not_before
    vm = p.follower.topology.vm("web-4")
    p.follower.clock.jump(60)
    approved_at = p.follower.clock.now()
    p.follower.approve(vm, [early.id])  # answered 200 once recorded
    await p.follower.durable()
    for clock in (p.leader.clock, p.follower.clock):  # the leader froze, then nobody led
        clock.jump(not_before - clock.now() + 30)
    p.follower.approve(vm, [late.id])  # still Scheduled on the follower
    await p.follower.durable()

    waiting, _ = p.tables.pending()
    apply_in_time(p.leader, waiting)  # what a new leader does first, then its timers
    p.leader.run_due()
    await p.leader.durable()

    def entries(event: EventRecord) -> list[tuple[str, float, Any]]:
        return [(h.kind, h.at, h.detail.get("reason")) for h in p.leader.history(event_id=event.id)]

    assert entries(early)[:3] == [
        ("event.scheduled", early.created_at, None),
        ("event.approved", approved_at, None),
        ("event.started", approved_at, "approved"),
    ]
    assert [kind for kind, _, _ in entries(late)][:2] == ["event.scheduled", "event.started"]
    assert entries(late)[1] == ("event.started", not_before, "not_before")
    assert await apply_requests(p.leader, p.tables) == 2  # applied again: nothing changes
    assert [h.kind for h in p.leader.history(event_id=early.id)].count("event.approved") == 1


async def test_an_approval_a_follower_recorded_before_the_not_before_is_applied_before_it(
    pair: Callable[..., Pair],
) -> None:
    """The leader is healthy but its clock passes the NotBefore before its request loop
    applied an approval a follower recorded, and answered 200, before the NotBefore: the
    timer waits for the approval (a reader's catch-up does not fire it), which is applied
    as of when it was made. Before, the timer fired first and the approval was skipped
    as moot: never in the history."""
    p = pair()
    p.start()
    leader = p.leader
    leader.apply_relayed_first(lambda: apply_requests(leader, p.tables))  # as a leader does
    event = live(leader, submit(leader, "user-reboot", "web-0"))[0]
    await p.synced()
    assert event.not_before is not None
    vm = p.follower.topology.vm("web-4")
    for clock in (leader.clock, p.follower.clock):
        clock.jump(event.not_before - clock.now() - 1)
    approved_at = p.follower.clock.now()
    p.follower.approve(vm, [event.id])
    await p.follower.durable()  # recorded: the VM is answered 200
    for clock in (leader.clock, p.follower.clock):
        clock.jump(2)  # the NotBefore passes before the leader's request loop wakes
    leader.catch_up()  # a VM's read on the leader: the timer waits for the approvals
    assert leader.event(event.id).status is EventStatus.SCHEDULED
    await leader.relayed_first()  # the leader's scheduler: the approvals first, then
    leader.run_due()  # the timers
    await leader.durable()
    entries = [(h.kind, h.at, h.detail.get("reason")) for h in leader.history(event_id=event.id)]
    assert entries[1:3] == [
        ("event.approved", approved_at, None),
        ("event.started", approved_at, "approved"),
    ], entries
    assert p.tables.pending() == ([], [])


async def test_an_approval_of_an_event_the_vm_does_not_see_is_refused_on_the_follower(
    pair: Callable[..., Pair],
) -> None:
    p = pair()
    p.start()
    event = live(p.leader, submit(p.leader, "user-reboot", "web-0"))[0]
    await p.synced()
    with pytest.raises(Exception, match="is not a scheduled event of this VM"):
        p.follower.approve(p.follower.topology.vm("jumpbox"), [event.id])
    assert p.follower.writes_in_flight() == 0 and p.tables.pending() == ([], [])


async def test_a_scope_enabled_by_a_request_to_a_follower_gets_notice(
    pair: Callable[..., Pair],
) -> None:
    p = pair(enablement="on-first-request")
    p.start()
    vm = p.follower.topology.vm("web-2")
    assert p.follower.note_request(vm) is True  # this request enables the scope
    assert p.follower.note_request(vm) is False
    for _ in range(200):
        if p.tables.pending()[1]:
            break
        await asyncio.sleep(0.02)
    assert await apply_requests(p.leader, p.tables) == 1
    assert p.leader.is_enabled("web")
    op = submit(p.leader, "user-reboot", "web-2")
    assert live(p.leader, op) and op.unnotified == ()
    assert [h.kind for h in p.leader.history()][:1] == ["scope.enabled"]


async def test_a_fleet_arriving_at_a_follower_is_enabled_a_slice_per_loop_turn(
    pair: Callable[..., Pair],
) -> None:
    """1,000 VMs' first polls at a follower reach the leader at once: it enables their
    scopes in a transition per ``SLICE``, and other work on its loop runs in between."""
    spec = fleet_from_builtins(
        {"scopes": [{"kind": "availability_set", "name": f"set{i}", "vms": 1} for i in range(1000)]}
    )
    p = pair(enablement="on-first-request", spec=spec)
    vms = list(p.follower.topology.vms.values())
    assert all(p.follower.note_request(vm) for vm in vms)  # each enables its scope
    for _ in range(500):
        if len(p.tables.pending()[1]) == len(vms):
            break
        await asyncio.sleep(0.02)
    seen: list[int] = []  # scopes of each transition published; 0: another task's turn
    p.leader.on_publish(lambda changes: seen.append(len(changes.scopes)))

    async def other_work() -> None:
        while True:
            seen.append(0)
            await asyncio.sleep(0)

    task = asyncio.create_task(other_work())
    await asyncio.sleep(0)
    assert await apply_requests(p.leader, p.tables) == len(vms)
    task.cancel()
    transitions = [n for n in seen if n]
    assert transitions == [SLICE] * (len(vms) // SLICE) + [len(vms) % SLICE]
    between_turns = "".join("|" if n == 0 else "x" for n in seen).split("|")
    assert max(len(run) for run in between_turns) == 1  # never two slices in one turn
    assert all(p.leader.is_enabled(vm.scope_id) for vm in vms)
    enabled = [h.scope_id for h in p.leader.history() if h.kind == "scope.enabled"]
    assert sorted(enabled) == sorted(vm.scope_id for vm in vms)
    assert p.tables.pending() == ([], [])


async def test_a_refused_relayed_request_drops_only_itself_from_its_slice(
    pair: Callable[..., Pair], monkeypatch: pytest.MonkeyPatch
) -> None:
    p = pair(enablement="on-first-request")
    scopes = ("web", "shop", "jumpbox")
    for scope in scopes:
        topology = p.follower.topology
        assert p.follower.note_request(topology.vm(topology.scope(scope).vm_names[0]))
    for _ in range(200):
        if len(p.tables.pending()[1]) == len(scopes):
            break
        await asyncio.sleep(0.02)
    applying = p.leader.note_relayed_requests

    def refusing_shop(requests: Iterable[tuple[str, str, float]]) -> None:
        batch = list(requests)
        if any(scope == "shop" for scope, _, _ in batch):
            raise FabricError("shop is not taking requests")
        applying(batch)

    monkeypatch.setattr(p.leader, "note_relayed_requests", refusing_shop)
    with structlog.testing.capture_logs() as logs:
        assert await apply_requests(p.leader, p.tables) == len(scopes)
    assert [p.leader.is_enabled(scope) for scope in scopes] == [True, False, True]
    assert p.tables.pending() == ([], [])  # the refused one is not tried for ever
    warnings = [(e["event"], e["subject"]) for e in logs if e["log_level"] == "warning"]
    assert warnings == [("a relayed request was refused; dropped", "shop")]


async def test_scope_requests_keep_the_newest_and_only_what_was_applied_is_forgotten(
    pair: Callable[..., Pair],
) -> None:
    p = pair()
    p.tables.record_scope_requests(
        [ScopeRequest("web", "web-0", T0 + 2.5), ScopeRequest("web", "web-1", T0 + 1.25),
         ScopeRequest("shop", "shop-0", T0 + 0.1)]
    )  # fmt: skip
    p.tables.record_scope_requests([ScopeRequest("shop", "shop-1", T0 + 0.05)])  # older
    pending = p.tables.pending()[1]
    assert sorted(pending, key=lambda r: r.scope_id) == [
        ScopeRequest("shop", "shop-0", T0 + 0.1), ScopeRequest("web", "web-0", T0 + 2.5),
    ]  # fmt: skip
    p.tables.record_scope_requests([ScopeRequest("web", "web-3", T0 + 3.75)])  # came since
    p.tables.done([], pending)
    assert p.tables.pending()[1] == [ScopeRequest("web", "web-3", T0 + 3.75)]


async def test_a_follower_answers_a_repeated_poll_itself_and_relays_once_a_minute(
    pair: Callable[..., Pair],
) -> None:
    """A VM polling a follower every second: the follower notes each poll for the
    reaction tracker and answers from its own view, and tells the leader of the scope's
    requests once per persist interval, not once a poll."""
    p = pair()
    vm, follower = p.follower.topology.vm("web-2"), p.follower
    assert follower.repeated_poll(vm) is None  # the scope's first request: noted the long way
    assert follower.note_request(vm) is False  # (enablement "always": nothing to enable)
    assert await _relayed_at(p, T0) == [T0]
    for second in range(1, 6):
        follower.clock.jump(1.0)
        assert follower.repeated_poll(vm) is follower.view("web")
        assert follower.take_polled() == {"web-2": T0 + second}
    await asyncio.sleep(0.3)
    assert await _relayed_at(p, T0) == [T0]  # nothing more relayed
    follower.clock.jump(60.0)  # the persist interval since the relayed one
    assert follower.repeated_poll(vm) is None  # the long way again: relayed once more
    assert follower.note_request(vm) is False
    assert await _relayed_at(p, T0 + 65) == [T0 + 65]


async def _relayed_at(p: Pair, at: float) -> list[float]:
    """When the scope requests relayed to the leader were made, once one of ``at`` is."""
    for _ in range(200):
        times = [request.at for request in p.tables.pending()[1]]
        if at in times:
            break
        await asyncio.sleep(0.02)
    return times


async def test_a_hole_in_the_log_reloads_the_whole_state(
    pair: Callable[..., Pair], pg: PgDatabase
) -> None:
    p = pair()
    p.start()
    submit(p.leader, "user-reboot", "web-0")
    await p.synced()
    await p.stop()
    submit(p.leader, "host-update", host="host-2")
    submit(p.leader, "live-migration", "jumpbox")
    pg.execute("DELETE FROM changes WHERE seq < (SELECT head FROM leader)")  # pruned
    p.start()
    await p.synced()
    assert p.reloads == [1]
    assert observable(p.follower, history=False) == observable(p.leader, history=False)


async def test_a_front_end_behind_waits_for_the_incarnation_a_vm_saw_elsewhere(
    pair: Callable[..., Pair],
) -> None:
    p = pair()
    submit(p.leader, "user-reboot", "web-0")
    wanted = p.leader.view("web").incarnation
    waiting = asyncio.create_task(p.follower.view_at_least("web", wanted, 20.0))
    await asyncio.sleep(0.1)
    assert not waiting.done()  # not replicated yet: the follower still shows 1
    p.start()
    view = await waiting
    assert view.incarnation == wanted
    stale = await p.follower.view_at_least("web", wanted + 5, 0.2)  # bounded
    assert stale.incarnation == wanted


def _request(vm_address: str, method: str, body: bytes = b"", etag: int | None = None) -> Request:
    headers = [(b"metadata", b"true")]
    if etag is not None:
        headers.append((b"if-none-match", b'"%d"' % etag))
    return Request(
        method=method, path="/metadata/scheduledevents", query=b"api-version=2020-07-01",
        headers=headers, client=vm_address, local_port=None, body=body,
    )  # fmt: skip


async def test_an_endpoint_behind_answers_what_a_vm_saw_elsewhere_once_caught_up(
    pair: Callable[..., Pair],
) -> None:
    p = pair()
    endpoint = Endpoint(p.follower, ImdsSettings(rate_limit=None))
    event = live(p.leader, submit(p.leader, "user-reboot", "web-0"))[0]
    seen = p.leader.view("web").incarnation  # what web-3 got from the leader's front-end
    web3 = p.follower.topology.vm("web-3").address
    poll = endpoint.handle(_request(web3, "GET", etag=seen))
    body = b'{"StartRequests":[{"EventId":"%s"}]}' % event.id.encode()
    post = endpoint.handle(_request(web3, "POST", body))
    assert poll.wait is not None and post.wait is not None  # not answered from a stale view
    poll_answer, post_answer = asyncio.ensure_future(poll.wait), asyncio.ensure_future(post.wait)
    await asyncio.sleep(0.1)
    assert not poll_answer.done() and not post_answer.done()
    p.start()
    assert (await asyncio.wait_for(poll_answer, 20)).status == 304
    assert ((await asyncio.wait_for(post_answer, 20)).status, p.tables.pending()[0][0].vm) == (
        200,
        "web-3",
    )


async def test_an_approval_of_an_event_nobody_shows_is_refused_after_the_catch_up_wait(
    pair: Callable[..., Pair],
) -> None:
    p = pair()
    p.start()
    endpoint = Endpoint(p.follower, ImdsSettings(rate_limit=None))
    web3 = p.follower.topology.vm("web-3").address
    started = asyncio.get_running_loop().time()
    post = endpoint.handle(_request(web3, "POST", b'{"StartRequests":[{"EventId":"NOPE"}]}'))
    assert post.wait is not None
    answer = await asyncio.wait_for(post.wait, 20)
    assert answer.status == 400 and b"is not a scheduled event of this VM" in answer.body
    assert asyncio.get_running_loop().time() - started >= CATCH_UP_SECONDS * 0.9
    assert p.tables.pending()[0] == []  # no approval recorded


async def test_an_approval_relayed_as_its_front_end_takes_the_lead_is_answered_once_recorded(
    pair: Callable[..., Pair], pg: PgDatabase
) -> None:
    """The leader dies while a follower's front-end is recording a VM's approval for it;
    that follower takes over before the record is committed: the VM is answered 200
    only once it is (the new leader then applies it), never from the new role's empty
    write queue."""
    p = pair()
    p.start()
    event = live(p.leader, submit(p.leader, "user-reboot", "web-0"))[0]
    await p.synced()
    await p.stop()
    endpoint = Endpoint(p.follower, ImdsSettings(rate_limit=None))
    web3 = p.follower.topology.vm("web-3").address
    body = b'{"StartRequests":[{"EventId":"%s"}]}' % event.id.encode()
    with pg.connect() as blocker, blocker.transaction():  # holds the record uncommitted
        blocker.execute("LOCK TABLE approval_requests IN EXCLUSIVE MODE")
        post = endpoint.handle(_request(web3, "POST", body))
        assert post.wait is not None  # answered once recorded
        store = p.stores[1]
        journal = ThreadedJournal(store)
        p.follower.lead(await asyncio.to_thread(store.load), journal)  # the takeover
        answer = asyncio.ensure_future(post.wait)
        await asyncio.sleep(0.3)
        assert not answer.done(), "answered 200 before the approval was recorded"
        assert p.follower.writes_in_flight() == 1
    assert (await asyncio.wait_for(answer, 20)).status == 200
    assert [a.vm for a in p.tables.pending()[0]] == ["web-3"]
    await apply_requests(p.follower, p.tables)  # the new leader applies it
    assert p.tables.pending() == ([], [])
    assert p.follower.event(event.id).approved_by == "web-3"
    await asyncio.to_thread(journal.close)

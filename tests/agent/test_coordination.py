"""Coordination backends over real Redis and PostgreSQL connections."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
import structlog

from forewarn.agent.approval import GroupState, group
from forewarn.agent.clock import AgentClock
from forewarn.agent.config_schema import AgentConfig, Approval, Coordination
from forewarn.agent.coordination import Claim, CoordinationError, Coordinator, connect
from forewarn.agent.flow import EventFlow
from forewarn.agent.handler_runs import Services
from forewarn.agent.metrics import AgentMetrics
from forewarn.agent.rules import Decision
from forewarn.agent.state import State
from forewarn.client import Event
from tests.agent.helpers import event

REDIS = "redis://127.0.0.1:6379/0"
POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"


@pytest.fixture(params=["redis", "postgres"])
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[Coordinator]:
    """A backend in a namespace of its own (tests never see each other's votes)."""
    url = REDIS if request.param == "redis" else POSTGRES
    coordinator = connect(
        Coordination(backend=request.param, url=url, namespace=f"test-{uuid.uuid4().hex}")
    )
    yield coordinator
    await coordinator.close()


async def test_record_returns_every_vote_including_its_own(backend: Coordinator) -> None:
    votes = await backend.record("EV", "web-0", True, "", 1.0)
    assert {vm: v.ready for vm, v in votes.items()} == {"web-0": True}
    votes = await backend.record("EV", "web-3", False, "drain failed", 2.0)
    assert {vm: (v.ready, v.reason) for vm, v in votes.items()} == {
        "web-0": (True, ""),
        "web-3": (False, "drain failed"),
    }
    votes = await backend.record("EV", "web-3", True, "", 3.0)  # a VM may change its vote
    assert votes["web-3"].ready and votes["web-3"].at == 3.0
    assert await backend.votes("EV") == votes
    assert await backend.votes("OTHER") == {}
    await backend.forget("EV")
    assert await backend.votes("EV") == {}


async def test_namespaces_keep_fleets_apart() -> None:
    for kind, url in (("redis", REDIS), ("postgres", POSTGRES)):
        a = connect(Coordination(backend=kind, url=url, namespace=f"a-{uuid.uuid4().hex}"))
        b = connect(Coordination(backend=kind, url=url, namespace=f"b-{uuid.uuid4().hex}"))
        await a.record("EV", "web-0", True, "", 1.0)
        assert await b.votes("EV") == {}
        await a.close()
        await b.close()


@pytest.mark.parametrize(("kind", "url"), [("redis", REDIS), ("postgres", POSTGRES)])
async def test_exactly_the_last_of_concurrent_voters_sees_the_group_complete(
    kind: str, url: str
) -> None:
    """Twelve agents (a connection each) vote at once: one of them, the last, sees all."""
    namespace = f"race-{uuid.uuid4().hex}"
    vms = tuple(f"vm-{i}" for i in range(12))
    agents = [connect(Coordination(backend=kind, url=url, namespace=namespace)) for _ in vms]
    results = await asyncio.gather(
        *(agent.record("EV", vm, True, "", 0.0) for agent, vm in zip(agents, vms, strict=True))
    )
    complete = [r for r in results if group(vms, r).state == GroupState.COMPLETE]
    assert len(complete) == 1
    for agent in agents:
        await agent.close()


async def test_one_agent_may_vote_on_several_events_at_once(backend: Coordinator) -> None:
    results = await asyncio.gather(
        *(backend.record(f"EV{i}", "web-0", True, "", 0.0) for i in range(8))
    )
    assert all(set(r) == {"web-0"} for r in results)


async def test_votes_expire_after_their_ttl() -> None:
    backends = [
        connect(Coordination(backend=kind, url=url, namespace=f"ttl-{uuid.uuid4().hex}", ttl=1))
        for kind, url in (("redis", REDIS), ("postgres", POSTGRES))
    ]
    for short in backends:
        await short.record("EV", "web-0", True, "", 1.0)
        assert set(await short.votes("EV")) == {"web-0"}
    await asyncio.sleep(2.2)
    for short in backends:
        assert await short.votes("EV") == {}
        await short.close()


async def test_an_unreachable_backend_is_a_coordination_error() -> None:
    for kind, url in (
        ("redis", "redis://127.0.0.1:9/0"),
        ("postgres", "postgresql://x@127.0.0.1:9/x"),
    ):
        coordinator = connect(Coordination(backend=kind, url=url))
        with pytest.raises(CoordinationError, match=kind):
            await coordinator.record("EV", "web-0", True, "", 1.0)
        await coordinator.close()


@pytest.mark.parametrize(("kind", "url"), [("redis", REDIS), ("postgres", POSTGRES)])
async def test_of_many_agents_claiming_at_once_exactly_one_gets_the_approval(
    kind: str, url: str
) -> None:
    """Twelve agents (a connection each) claim each of 20 events at once: one wins each."""
    namespace = f"claim-{uuid.uuid4().hex}"
    vms = tuple(f"vm-{i}" for i in range(12))
    agents = [connect(Coordination(backend=kind, url=url, namespace=namespace)) for _ in vms]
    try:
        for n in range(20):
            claims = await asyncio.gather(
                *(a.claim(f"EV{n}", vm, 30) for a, vm in zip(agents, vms, strict=True))
            )
            winners = [c.holder for c in claims if c.ours]
            assert len(winners) == 1, claims
            assert {c.holder for c in claims} == set(winners)
    finally:
        for agent in agents:
            await agent.close()


async def test_a_claim_is_renewed_by_its_holder_and_done_for_good_once_settled(
    backend: Coordinator,
) -> None:
    first = await backend.claim("EV", "web-0", 30)
    assert first.ours and first.holder == "web-0" and not first.done
    assert (await backend.claim("EV", "web-0", 30)).ours  # a restarted holder renews it
    other = await backend.claim("EV", "web-3", 30)
    assert not other.ours and other.holder == "web-0" and not other.done
    assert not await backend.settle("EV", "web-3")  # not the holder: changes nothing
    assert not (await backend.claim("EV", "web-3", 30)).ours
    assert await backend.settle("EV", "web-0")
    assert await backend.settle("EV", "web-0")  # again (a retry): still its own
    for vm in ("web-0", "web-3"):
        done = await backend.claim("EV", vm, 30)
        assert done.done and done.holder == "web-0" and not done.ours
    await backend.forget("EV")  # the event left one agent's document: its votes go ...
    assert await backend.votes("EV") == {}
    for vm in ("web-0", "web-3"):  # ... and the approval stays done until the claim expires
        done = await backend.claim("EV", vm, 30)
        assert done.done and done.holder == "web-0" and not done.ours


async def test_a_claim_whose_holder_died_is_taken_over_when_its_lease_runs_out(
    backend: Coordinator,
) -> None:
    assert (await backend.claim("EV", "web-0", 0.3)).ours
    assert not (await backend.claim("EV", "web-3", 0.3)).ours
    await asyncio.sleep(0.6)
    taken = await backend.claim("EV", "web-3", 30)
    assert taken.ours and taken.holder == "web-3"
    assert not (await backend.claim("EV", "web-0", 30)).ours
    assert not await backend.settle("EV", "web-0")  # the old holder lost it


async def test_a_done_claim_expires_with_the_ttl_even_after_forget() -> None:
    backends = {"redis": REDIS, "postgres": POSTGRES}
    for name, url in backends.items():
        coordinator = connect(
            Coordination(backend=name, url=url, namespace=f"test-{uuid.uuid4().hex}", ttl=1)
        )
        try:
            assert (await coordinator.claim("EV", "web-0", 30)).ours
            assert await coordinator.settle("EV", "web-0")
            await coordinator.forget("EV")
            assert (await coordinator.claim("EV", "web-3", 30)).done
            await asyncio.sleep(1.3)
            await coordinator.forget("OTHER")  # (PostgreSQL drops expired claims here)
            assert (await coordinator.claim("EV", "web-3", 30)).ours, name
        finally:
            await coordinator.close()


async def test_an_agent_that_read_the_group_complete_never_approves_after_the_poster_left(
    backend: Coordinator,
) -> None:
    """The race of two agents of one group: web-5 completes the group, claims, posts, sees
    the event leave and forgets it, all while web-2 (its document a poll behind) has read
    the complete group and is about to claim. web-2 must find the approval done."""
    posts: list[str] = []
    claiming, forgotten = asyncio.Event(), asyncio.Event()

    class Late:  # web-2's view of the backend: its claim waits until web-5 forgot
        def __getattr__(self, name: str) -> Any:
            return getattr(backend, name)

        async def claim(self, event_id: str, vm: str, lease: float) -> Claim:
            claiming.set()
            await forgotten.wait()
            return await backend.claim(event_id, vm, lease)

    ev = event(resources=("web-2", "web-5"))
    late = flow("web-2", cast(Coordinator, Late()), ev, posts)
    poster = flow("web-5", backend, ev, posts)
    late_task = asyncio.create_task(late.run())
    await asyncio.sleep(0.01)  # web-2 voted first: the group waits for web-5
    poster_task = asyncio.create_task(poster.run())
    await asyncio.wait_for(claiming.wait(), 5)  # web-2 read both votes and claims ...
    assert posts == ["web-5"]  # ... after web-5 posted
    poster.left()  # the event started and ended: web-5 recovers and forgets it
    await asyncio.wait_for(poster_task, 5)
    forgotten.set()
    for _ in range(20):  # web-2's claim answered; it would post now
        await asyncio.sleep(0.01)
    assert posts == ["web-5"]
    late.left()
    await asyncio.wait_for(late_task, 5)
    assert posts == ["web-5"]


def flow(vm: str, coordinator: Coordinator, ev: Event, posts: list[str]) -> EventFlow:
    """A coordinated flow of ``vm`` without handlers; its approvals are noted in ``posts``."""

    async def approve(event_id: str) -> None:
        posts.append(vm)

    svc = Services(
        config=AgentConfig(
            poll_interval=0.05, coordination=Coordination(backend="redis", claim_lease=30)
        ),
        vm_name=vm,
        clock=AgentClock(),
        state=State(":memory:"),
        metrics=AgentMetrics(),
        handlers={},
        coordinator=coordinator,
        approve=approve,
        log=structlog.get_logger().bind(vm=vm),
    )
    decision = Decision(rule="group", ignore=False, approval=Approval.COORDINATED)
    return EventFlow(svc, ev, decision, time.time())

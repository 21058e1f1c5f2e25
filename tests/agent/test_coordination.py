"""Coordination backends over real Redis and PostgreSQL connections."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest

from forewarn.agent.approval import GroupState, group
from forewarn.agent.config_schema import Coordination
from forewarn.agent.coordination import CoordinationError, Coordinator, connect

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
    await backend.forget("EV")
    assert (await backend.claim("EV", "web-3", 30)).ours


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

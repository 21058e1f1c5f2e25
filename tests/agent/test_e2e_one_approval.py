"""Exactly one approval POST per coordinated event, whoever completes the group.

Six agents (web-0 … web-5, real processes behind a proxy that counts every approval POST
that reaches the endpoint) coordinate over Redis or PostgreSQL through many events on
random subsets of the availability set; agents are SIGKILLed at random moments and
restarted. Every event must be approved, and by exactly one POST.
"""

from __future__ import annotations

import os
import random
import signal
import time
import uuid
from collections.abc import Callable, Iterator

import pytest

from tests.agent.agentproc import AgentProcess, Recorder, handler_argv
from tests.agent.conftest import Fleet
from tests.agent.coordinated import BACKENDS, coordinated_config
from tests.agent.countingproxy import CountingProxy
from tests.support.marks import SLOW
from tests.support.waiting import wait_until

WEB = tuple(f"web-{i}" for i in range(6))
# How the agent's warning begins when it will not send an approval again after a restart.
AT_MOST_ONCE = "the approval may have gone out before a restart; not sending another"


@pytest.fixture
def proxy(fleet: Fleet) -> Iterator[CountingProxy]:
    counting = CountingProxy(fleet.url)
    yield counting
    counting.close()


def run_groups(
    backend: str,
    events: int,
    kills: float,
    fleet: Fleet,
    proxy: CountingProxy,
    recorder: Recorder,
    start_agent: Callable[..., AgentProcess],
) -> None:
    # FOREWARN_TEST_SEED replays a failed run's choices (VMs, victims, kill times).
    seed = int(os.environ.get("FOREWARN_TEST_SEED") or random.randrange(1 << 30))
    rng = random.Random(seed)
    namespace = f"one-{uuid.uuid4().hex}"
    agents = {
        vm: start_agent(
            vm,
            coordinated_config(
                fleet, vm, backend, namespace,
                handler_argv(recorder.path, vm, "--sleep", f"{0.05 * i:.2f}"),
                claim_lease=2,
            ),
            proxy.url,
        )
        for i, vm in enumerate(WEB)
    }  # fmt: skip
    approved: list[str] = []
    at_most_once: list[str] = []
    for _ in range(events):
        vms = sorted(rng.sample(WEB, rng.randint(2, len(WEB))))
        op = fleet.call(
            "POST", "/api/v1/operations", expect=201, json={"kind": "platform-reboot", "vms": vms}
        )
        ids: list[str] = op["event_ids"]  # one per host: each a group of its own
        victim = None
        if rng.random() < kills:
            victim = agents[rng.choice(vms)]
            time.sleep(rng.uniform(0.0, 1.2))
            victim.stop(signal.SIGKILL)
            victim.start(wait_ready=False)
        deadline = time.monotonic() + 90
        while not all(fleet.status(e) == "Started" for e in ids):
            # An agent killed while its POST was out sends no second one (at most once):
            # that event starts at NotBefore instead, as it would without an agent.
            unsure = [] if victim is None else [
                line for line in victim.logs()
                if str(line.get("event", "")).startswith(AT_MOST_ONCE)
            ]  # fmt: skip
            if unsure or time.monotonic() > deadline:
                if not unsure:
                    how = victim.post_mortem() if victim is not None else "no agent was killed"
                    pytest.fail(f"no approval of {ids} in 90 s (seed {seed}): {how}")
                at_most_once += [line["event_id"] for line in unsure]
                break
            time.sleep(0.05)
        approved += ids
        fleet.advance(3600)
        wait_until(lambda ids=ids: all(fleet.status(e) is None for e in ids), what=f"{ids} to end")
    time.sleep(1.0)  # a late second POST would arrive now
    counts = {event_id: proxy.posts[event_id] for event_id in approved}
    expected = {e: counts[e] if e in at_most_once else 1 for e in approved}
    extra = {e: proxy.answers.get(e) for e in approved if counts[e] != expected[e]}
    assert counts == expected, (seed, extra)
    assert all(counts[e] <= 1 for e in at_most_once)
    assert len(at_most_once) <= len(approved) // 4, (seed, at_most_once)  # a rare window
    for event_id in approved:
        assert fleet.event(event_id) is None
        if event_id not in at_most_once:
            [entry] = [h for h in fleet.approvals(event_id) if h["kind"] == "event.approved"]
            assert entry["detail"]["by"] in WEB
    posted = sum(len(a.logs("approved")) for a in agents.values())
    assert posted <= len(approved)


def test_a_coordinated_event_is_approved_by_exactly_one_post(
    fleet: Fleet,
    proxy: CountingProxy,
    recorder: Recorder,
    start_agent: Callable[..., AgentProcess],
) -> None:
    run_groups("redis", 6, 0.3, fleet, proxy, recorder, start_agent)


@pytest.mark.parametrize("backend", sorted(BACKENDS))
@pytest.mark.parametrize("kills", [0.0, 0.6], ids=["calm", "kills"])
@SLOW[0]
@SLOW[1]
def test_many_coordinated_events_get_one_post_each(
    backend: str,
    kills: float,
    fleet: Fleet,
    proxy: CountingProxy,
    recorder: Recorder,
    start_agent: Callable[..., AgentProcess],
) -> None:
    run_groups(backend, 24, kills, fleet, proxy, recorder, start_agent)

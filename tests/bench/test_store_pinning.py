"""The fleet benchmark holds a local PostgreSQL server on the server's core, and lets go."""

from __future__ import annotations

import contextlib
import os

import psycopg
import pytest

from bench.store_pinning import postgres_pids, postgres_pinned
from tests.scaleout.pg import ADMIN_URL, pg_available

pytestmark = pytest.mark.skipif(pg_available() is not None, reason=str(pg_available()))


def _affinities(pids: list[int]) -> dict[int, set[int]]:
    found = {}
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):  # a backend that ended meanwhile
            found[pid] = os.sched_getaffinity(pid)
    return found


def test_every_process_of_the_server_runs_on_the_cpu_and_gets_its_cpus_back() -> None:
    pids = postgres_pids(ADMIN_URL)
    if not pids:
        pytest.skip("the PostgreSQL server is not a process of this machine")
    before = _affinities(pids)
    cpu = max(os.sched_getaffinity(pids[0]))  # one the server may run on today
    with postgres_pinned(ADMIN_URL, cpu) as pinned:
        assert pinned[0] == pids[0]  # the postmaster, whose CPU set new backends inherit
        assert all(cpus == {cpu} for cpus in _affinities(pinned).values())
        with psycopg.connect(ADMIN_URL) as late:  # a backend forked inside the block
            row = late.execute("SELECT pg_backend_pid()").fetchone()
            assert row is not None and os.sched_getaffinity(row[0]) == {cpu}
            assert row[0] in postgres_pids(ADMIN_URL)
    restored = _affinities(list(before))
    assert restored == {pid: cpus for pid, cpus in before.items() if pid in restored}
    assert restored[pids[0]] == before[pids[0]]


def test_a_server_that_is_not_local_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench import store_pinning

    local = postgres_pids(ADMIN_URL)
    before = _affinities(local)
    monkeypatch.setattr(store_pinning, "_visible", lambda pid: False)  # as from another host
    with postgres_pinned(ADMIN_URL, 0) as pinned:
        assert pinned == []
        assert _affinities(local) == {pid: before[pid] for pid in _affinities(local)}

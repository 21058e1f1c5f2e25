"""The graded verdict is kept between requests while nothing it was graded from moved:
no fact written (by this process or any other on the store), the clock still, the same
window. Once any of it moves, the next request is graded anew and shows what moved.

Observed from outside: the answers of ``GET /api/v1/reactions`` and ``/api/v1/report``
and the counts at ``/metrics``."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import re
import time
import weakref
from collections.abc import Iterator

import pytest

from forewarn.rehearsal import ReactionData, VmReaction
from forewarn.rehearsal.verdict_memo import VerdictKey, VerdictMemo
from forewarn.store.postgres import PostgresStore
from tests.rehearsal.conftest import Rehearsal, vm_verdict
from tests.scaleout.pg import PgDatabase, pg_database
from tests.support.fabrics import make_fabric


async def counts(rehearsal: Rehearsal) -> tuple[int, int]:
    """(graded, reused) as ``/metrics`` says them."""
    text = (await rehearsal.control_get("/metrics")).text
    graded = re.search(r"^forewarn_verdicts_graded_total (\S+)$", text, re.M)
    reused = re.search(r"^forewarn_verdicts_reused_total (\S+)$", text, re.M)
    assert graded and reused, text
    return int(float(graded.group(1))), int(float(reused.group(1)))


async def test_a_still_clock_and_no_new_fact_get_the_verdict_graded_once(
    rehearsal: Rehearsal,
) -> None:
    op = rehearsal.submit("user-reboot", "web-0")
    await rehearsal.poll("web-0")
    first = await rehearsal.control_get("/api/v1/reactions")
    again = await rehearsal.control_get("/api/v1/reactions")
    page = await rehearsal.control_get("/api/v1/report")
    assert first.status_code == again.status_code == page.status_code == 200
    assert again.content == first.content and again.headers["etag"] == first.headers["etag"]
    assert [e["id"] for e in first.json()["events"]] == rehearsal.event_ids(op)
    assert rehearsal.event_ids(op)[0] in page.text
    assert await counts(rehearsal) == (1, 2)


async def test_a_new_fact_the_clock_or_the_window_grade_it_anew(rehearsal: Rehearsal) -> None:
    op = rehearsal.submit("user-reboot", "web-0")
    (event_id,) = rehearsal.event_ids(op)
    await rehearsal.poll("web-0")
    assert vm_verdict(await rehearsal.verdict(event_id), "web-0")["approved_at"] is None
    await rehearsal.approve("web-0", event_id)  # a fact: written before the next grading
    assert vm_verdict(await rehearsal.verdict(event_id), "web-0")["approved_at"] is not None
    assert await counts(rehearsal) == (2, 0)
    before = await rehearsal.report()
    rehearsal.advance(1)  # the clock moved: the grade may have
    after = await rehearsal.report()
    assert after["generated_at"] == before["generated_at"] + 1
    await rehearsal.report(since=0)  # another window
    await rehearsal.report(stale_after=5)
    assert await counts(rehearsal) == (5, 1)


@pytest.fixture
def shared() -> Iterator[PgDatabase]:
    """A PostgreSQL database, as a scaled-out fleet's front-ends share one."""
    yield from pg_database()


async def test_what_another_front_end_wrote_is_graded_anew(shared: PgDatabase) -> None:
    """A scaled-out fleet's other front-ends write to the same store: their writes are
    counted there, so the verdict kept here is not handed out past them."""
    store, other = PostgresStore(shared.url), PostgresStore(shared.url)
    fabric = make_fabric(store=store)
    try:
        rehearsal = Rehearsal(fabric, store)  # type: ignore[arg-type]
        op = rehearsal.submit("user-reboot", "web-1")
        (event_id,) = rehearsal.event_ids(op)
        assert vm_verdict(await rehearsal.verdict(event_id), "web-1")["first_seen"] is None
        assert vm_verdict(await rehearsal.verdict(event_id), "web-1")["first_seen"] is None
        seen = fabric.clock.now()
        other.save_reactions(ReactionData(vms=[  # what web-1 was served by another process
            VmReaction(event_id=event_id, vm="web-1", first_seen=seen, incarnation=2)
        ]))  # fmt: skip
        assert vm_verdict(await rehearsal.verdict(event_id), "web-1")["first_seen"] == seen
        assert await counts(rehearsal) == (2, 1)
    finally:
        fabric.close()
        store.close()
        other.close()


async def test_a_verdict_nobody_asks_for_is_let_go(rehearsal: Rehearsal) -> None:
    rehearsal.submit("user-reboot", "web-0")
    await rehearsal.report()
    memo = rehearsal.reactions.verdicts
    assert memo.holding()
    memo.keep_seconds = 0.0
    writing = asyncio.create_task(rehearsal.reactions.run(interval=0.01))
    try:
        for _ in range(500):
            if not memo.holding():
                break
            await asyncio.sleep(0.01)
    finally:
        writing.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await writing
    assert not memo.holding()
    await rehearsal.report()  # graded again, as nothing was kept
    assert await counts(rehearsal) == (2, 0)


class _Verdict(list[object]):
    """A stand-in for a graded verdict: rows, emptied when the memo lets it go."""

    def let_go(self) -> None:
        self.clear()


def test_the_memo_holds_one_verdict_and_grades_when_a_key_part_differs() -> None:
    memo = VerdictMemo()
    fleet = object()
    key = VerdictKey(since=None, stale_after=60.0, now=5.0, writes=3,
                     deleted=frozenset(), fleet=fleet)  # fmt: skip
    made: list[object] = []

    def grade() -> object:
        made.append(_Verdict())
        return made[-1]

    first = memo.verdict(key, grade)  # type: ignore[arg-type]
    assert memo.verdict(key, grade) is first  # type: ignore[arg-type]
    others = [
        VerdictKey(since=None, stale_after=60.0, now=5.0, writes=3,
                   deleted=frozenset({"web-2"}), fleet=fleet),
        VerdictKey(since=None, stale_after=60.0, now=5.0, writes=3,
                   deleted=frozenset(), fleet=object()),
        VerdictKey(since=None, stale_after=60.0, now=5.0, writes=4,
                   deleted=frozenset(), fleet=fleet),
    ]  # fmt: skip
    for other in others:
        assert memo.verdict(other, grade) is made[-1]  # type: ignore[arg-type]
    assert len(made) == 4 and (memo.graded, memo.reused) == (4, 1)


def test_a_verdict_that_took_longer_to_grade_than_it_is_kept_is_kept_from_then() -> None:
    """At a million VMs grading takes a minute, longer than a verdict is kept unused: it
    is kept from when it was graded, not from when it was asked for."""
    memo = VerdictMemo(keep_seconds=0.05)
    key = VerdictKey(since=None, stale_after=60.0, now=5.0, writes=1,
                     deleted=frozenset(), fleet=None)  # fmt: skip

    def slow_grade() -> object:
        time.sleep(0.1)
        return _Verdict()

    made = memo.verdict(key, slow_grade)  # type: ignore[arg-type]
    assert memo.forget_idle()  # just graded: still kept
    assert memo.verdict(key, slow_grade) is made  # type: ignore[arg-type]
    time.sleep(0.06)
    assert not memo.forget_idle()


def test_a_kept_verdict_is_frozen_out_of_the_collectors_passes_and_freed_when_let_go() -> None:
    """After a region rollout over a million VMs a verdict is tens of millions of objects:
    a collection walking them would hold the interpreter (and the event loop) for
    seconds. Kept, they are in no generation a pass walks; let go, they are freed."""
    memo = VerdictMemo(keep_seconds=0.0)
    key = VerdictKey(since=None, stale_after=60.0, now=5.0, writes=1,
                     deleted=frozenset(), fleet=None)  # fmt: skip

    class Row:  # a verdict's row (weakly referable, to see it freed)
        pass

    def grade() -> object:
        return _Verdict(Row() for _ in range(1000))

    rows: list[Row] = memo.verdict(key, grade)  # type: ignore[arg-type,assignment]
    walked = {id(o) for g in range(3) for o in gc.get_objects(generation=g)}
    assert not any(id(r) in walked for r in rows)
    one = weakref.ref(rows[0])
    del rows
    assert not memo.forget_idle()
    assert one() is None


def test_a_verdict_read_by_id_is_kept_beside_the_latest_until_it_goes_unasked() -> None:
    """A reader paging through one verdict by its id keeps it while others are graded
    after it (two held at most); an id never kept, or let go, finds nothing."""
    memo = VerdictMemo(keep_seconds=0.2)
    keys = [VerdictKey(since=None, stale_after=60.0, now=float(n), writes=1,
                       deleted=frozenset(), fleet=None) for n in range(4)]  # fmt: skip
    made: list[_Verdict] = []

    def grade() -> _Verdict:
        made.append(_Verdict([len(made)]))
        return made[-1]

    first_id, first = memo.kept(keys[0], grade)  # type: ignore[arg-type]
    assert memo.pinned(first_id) is first
    second_id, _ = memo.kept(keys[1], grade)  # type: ignore[arg-type]
    assert second_id != first_id
    assert memo.pinned(first_id) is first  # kept beside the latest
    third_id, _ = memo.kept(keys[2], grade)  # type: ignore[arg-type]
    assert memo.pinned(second_id) is None  # never pinned: let go when the third came
    assert memo.pinned(first_id) is first and memo.pinned("nothing-kept") is None
    assert first == [0] and made[1] == []  # the pinned one whole, the one let go emptied
    assert memo.kept(keys[0], grade)[1] is first  # the pinned one serves its own key
    assert len(made) == 3
    time.sleep(0.25)
    assert not memo.forget_idle()
    assert memo.pinned(first_id) is None and memo.pinned(third_id) is None


def test_unpinned_verdicts_are_held_one_at_a_time() -> None:
    memo = VerdictMemo()
    held = []

    for n in range(3):
        key = VerdictKey(since=None, stale_after=60.0, now=float(n), writes=1,
                         deleted=frozenset(), fleet=None)  # fmt: skip
        verdict_id, verdict = memo.kept(key, _Verdict)  # type: ignore[arg-type]
        held.append((verdict_id, weakref.ref(verdict)))
        del verdict
    assert [ref() is None for _, ref in held] == [True, True, False]
    assert [memo.pinned(i) is not None for i, _ in held] == [False, False, True]

"""watch(): the first document, then each change (added, updated, removed), over a real
user-reboot lifecycle; conditional requests (If-None-Match) between changes."""

from __future__ import annotations

from forewarn.client import (
    EventStatus,
    EventType,
    ScheduledEventsClient,
)
from forewarn.client.core import Answer, RequestSpec, Settings
from forewarn.client.syncwire import SyncWire
from forewarn.testing import Forewarn


class Recording(SyncWire):
    """The real HTTP transport, remembering each request's If-None-Match and the status."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.seen: list[tuple[str | None, int]] = []

    def send(self, spec: RequestSpec, settings: Settings) -> Answer:
        answer = super().send(spec, settings)
        if spec.method == "GET":
            self.seen.append((spec.headers.get("If-None-Match"), answer.status))
        return answer


def test_watch_follows_a_user_reboot(forewarn: Forewarn) -> None:
    transport = Recording(forewarn.url("web-0"))
    with ScheduledEventsClient(forewarn.url("web-0"), transport=transport) as client:
        changes = client.watch(interval=0.01)

        first = next(changes)
        assert (first.added, first.updated, first.removed) == ((), (), ())
        assert first.document.events == () and first.previous is None

        (event_id,) = forewarn.trigger("user-reboot", "web-0")["event_ids"]
        added = next(changes)
        (event,) = added.added
        assert (event.event_id, event.event_type, event.status) == (
            event_id, EventType.REBOOT, EventStatus.SCHEDULED,
        )  # fmt: skip
        assert (added.updated, added.removed) == ((), ())
        assert added.previous == first.document
        assert added.document.incarnation > first.document.incarnation

        client.approve(event_id)
        started = next(changes)
        (event,) = started.updated
        assert event.event_id == event_id and event.started and event.not_before is None
        assert (started.added, started.removed) == ((), ())

        forewarn.advance(20 * 60)  # the reboot runs and the event is held, then removed
        removed = next(changes)
        (event,) = removed.removed
        assert event.event_id == event_id and event.started
        assert removed.document.events == ()
        assert (removed.added, removed.updated) == ((), ())

        # nothing changed since: a conditional poll is a 304 and no change
        quiet = client.poll(removed.document)
        assert not quiet and quiet.document is removed.document

    tags = [tag for tag, _ in transport.seen]
    assert tags[0] is None  # the first request cannot be conditional
    assert all(tag is not None for tag in tags[1:])
    assert (removed.document.etag, 304) == transport.seen[-1]


async def test_async_watch_follows_a_user_reboot(forewarn: Forewarn) -> None:
    async with forewarn.async_client("web-0") as client:
        changes = client.watch(interval=0.01)
        first = await anext(changes)
        assert first.document.events == ()

        (event_id,) = forewarn.trigger("user-reboot", "web-0")["event_ids"]
        added = await anext(changes)
        assert [e.event_id for e in added.added] == [event_id]

        await client.approve(event_id)
        started = await anext(changes)
        assert [(e.event_id, e.status) for e in started.updated] == [
            (event_id, EventStatus.STARTED)
        ]

        forewarn.complete(event_id)
        removed = await anext(changes)
        assert [e.event_id for e in removed.removed] == [event_id]
        assert removed.document.events == ()
        await changes.aclose()


def test_watch_resumes_from_a_known_document(forewarn: Forewarn) -> None:
    with forewarn.client("web-1") as client:
        known = client.get()
        (event_id,) = forewarn.trigger("user-redeploy", "web-1")["event_ids"]
        change = next(client.watch(interval=0.01, since=known))
        assert [e.event_id for e in change.added] == [event_id]
        assert change.previous == known

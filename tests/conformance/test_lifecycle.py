"""The lifecycle rules judge what a follower saw: short notice, an early removal, a status
going backwards, a document changed under the same incarnation, an event reborn under a
new EventId. The follower is fed documents directly (no endpoint: nothing is sent)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from forewarn.conformance.documents import Sample
from forewarn.conformance.follow import Follower
from forewarn.conformance.lifecycle import Sighting, judge_lifecycle
from forewarn.conformance.session import Session
from forewarn.conformance.wire import Wire
from forewarn.contract import format_rfc1123

T0 = 1_800_000_000.0
ID = "6A1B2C3D-0000-4000-8000-00000000C0DE"


def _event(status: str, not_before: float | None = None, event_id: str = ID) -> dict[str, Any]:
    return {"EventId": event_id, "EventStatus": status, "EventType": "Freeze",
            "ResourceType": "VirtualMachine", "Resources": ["vm"],
            "NotBefore": format_rfc1123(not_before) if not_before else "",
            "Description": "", "EventSource": "Platform", "DurationInSeconds": 9}  # fmt: skip


def _follow(*documents: tuple[int, list[dict[str, Any]]]) -> dict[str, str]:
    """Feed ``documents`` (incarnation, events), a second apart; each rule's verdict."""
    follower = Follower(Session(Wire("http://127.0.0.1:1")), interval=1, timeout=1,
                        approve=False, tell=lambda line: None)  # fmt: skip
    for n, (incarnation, events) in enumerate(documents):
        raw = {"DocumentIncarnation": incarnation, "Events": events}
        follower._update(Sample("2020-07-01", raw, b"", None), T0 + n, first=n == 0)
    results = judge_lifecycle(
        list(follower.sightings.values()), [], follower.steps, follower.replaced,
        followed=True, approve=False, time_scale=1, slack=2,
    )  # fmt: skip
    return {r.rule.id: f"{r.verdict} {r.detail}" for r in results}


def test_a_freeze_removed_before_its_impact_fails_only_l5() -> None:
    verdicts = _follow((1, []), (2, [_event("Scheduled", T0 + 901)]), (3, [_event("Started")]),
                       (4, []))  # fmt: skip
    assert {k: v.split()[0] for k, v in verdicts.items()} == {
        "L1.notice": "PASS", "D3.same-id": "PASS", "L3.forward": "PASS",
        "L5.removed": "FAIL", "D1.steps": "PASS", "P3.approved": "SKIP",
        "P1.several-ids": "SKIP"}  # fmt: skip
    # removed a second after Started: before its 9 s impact (DurationInSeconds)
    assert verdicts["L5.removed"] == (
        f"FAIL {ID} removed 1.0 s after Started, before its 9 s impact"
    )


def test_short_notice_fails_l1() -> None:
    verdicts = _follow((1, []), (2, [_event("Scheduled", T0 + 61)]))
    assert verdicts["L1.notice"] == f"FAIL Freeze {ID}: 60.0 s notice, less than 900 s"


def test_an_event_there_at_start_is_not_judged_on_notice() -> None:
    verdicts = _follow((2, [_event("Scheduled", T0 + 61)]))
    assert verdicts["L1.notice"].startswith("SKIP no event was seen created Scheduled")


def test_backwards_and_an_unchanged_incarnation_fail() -> None:
    verdicts = _follow((1, []), (2, [_event("Scheduled", T0 + 901)]), (3, [_event("Started")]),
                       (3, [_event("Scheduled", T0 + 901)]))  # fmt: skip
    assert verdicts["L3.forward"] == (f"FAIL {ID}: Started, then Scheduled again at incarnation 3")
    assert verdicts["D1.steps"] == "FAIL the events changed, DocumentIncarnation 3 -> 3"


def test_an_event_reborn_under_a_new_id_fails_d3() -> None:
    other = "7B2C3D4E-0000-4000-8000-00000000C0DE"
    verdicts = _follow((1, []), (2, [_event("Scheduled", T0 + 901)]),
                       (3, [_event("Started", event_id=other)]))  # fmt: skip
    assert verdicts["D3.same-id"] == f"FAIL {ID} (Scheduled) came back as {other} (Started)"


def test_time_scale_divides_the_minimum() -> None:
    sighting = Sighting(ID, "Reboot", "User", ["vm"], -1, T0, "Scheduled", False,
                        not_before=datetime.fromtimestamp(T0 + 14, UTC))  # fmt: skip
    (l1, *_) = judge_lifecycle([sighting], [], [], [], followed=True, approve=False,
                               time_scale=60, slack=2)  # fmt: skip
    assert (l1.verdict, l1.detail) == ("PASS", "Reboot 14.0 s")
    (l1, *_) = judge_lifecycle([sighting], [], [], [], followed=True, approve=False,
                               time_scale=30, slack=2)  # fmt: skip
    assert l1.verdict == "FAIL"

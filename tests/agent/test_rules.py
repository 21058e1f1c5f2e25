"""Rules: the first match decides; short freezes and unmatched events are ignored."""

from __future__ import annotations

from pathlib import Path

import pytest

from forewarn.agent.config_layers import load_config
from forewarn.agent.config_schema import Approval
from forewarn.agent.rules import RuleBook
from tests.agent.helpers import event, write

RULES = """
    [handlers.drain]
    type = "exec"
    argv = ["true"]

    [handlers.k8s]
    type = "kubernetes"

    [handlers.notify]
    type = "webhook"
    url = "http://127.0.0.1:9/hook"

    [[rules]]
    name = "not-mine"
    this_vm = false
    ignore = true

    [[rules]]
    name = "long-freeze"
    event_types = ["freeze"]
    min_duration = 10
    max_duration = 60
    handlers = ["notify"]
    approval = "solo"

    [[rules]]
    name = "user-reboot"
    event_types = ["Reboot", "Redeploy"]
    sources = ["User"]
    max_vms = 1
    handlers = ["drain", "notify"]
    recovery = ["notify"]
    approval = "after-handlers"

    [[rules]]
    name = "group"
    min_vms = 2
    handlers = ["k8s", "notify"]
    approval = "never"

    [[rules]]
    name = "started"
    statuses = ["Started"]
    handlers = ["notify"]
"""


@pytest.fixture
def book(tmp_path: Path) -> RuleBook:
    return RuleBook(load_config(write(tmp_path / "rules.toml", RULES)))


@pytest.mark.parametrize(
    ("fields", "rule", "ignored"),
    [
        ({"event_type": "Freeze", "duration": 5}, "short-freeze", True),
        ({"event_type": "Freeze", "duration": 9}, "short-freeze", True),
        ({"event_type": "Freeze", "duration": 10}, "long-freeze", False),
        ({"event_type": "Freeze", "duration": 61}, "no-rule", True),
        ({"event_type": "Freeze", "duration": -1}, "no-rule", True),  # unknown: not short
        ({"event_type": "Reboot", "source": "User"}, "user-reboot", False),
        ({"event_type": "Redeploy", "source": "User"}, "user-reboot", False),
        ({"event_type": "Reboot", "source": "Platform"}, "no-rule", True),
        ({"resources": ("web-0", "web-3")}, "group", False),
        ({"resources": ("web-1",)}, "not-mine", True),
        ({"resources": ("_web-0",), "source": "User"}, "user-reboot", False),  # 2017-03-01
        ({"status": "Started", "source": "User"}, "started", False),
        ({"event_type": "Hibernate", "resources": ("web-0", "web-1")}, "group", False),
        ({"event_type": "Hibernate"}, "no-rule", True),
    ],
)
def test_first_matching_rule_decides(
    book: RuleBook, fields: dict[str, object], rule: str, ignored: bool
) -> None:
    decision = book.decide(event(**fields), "web-0")  # type: ignore[arg-type]
    assert (decision.rule, decision.ignore) == (rule, ignored)
    if ignored:
        assert decision.handlers == () and decision.approval == Approval.NEVER


def test_actions_of_a_rule(book: RuleBook) -> None:
    decision = book.decide(event(source="User"), "web-0")
    assert decision.handlers == ("drain", "notify")
    assert decision.recovery == ("notify",)
    assert decision.approval == Approval.AFTER_HANDLERS


def test_recovery_defaults_to_undoing_the_kubernetes_preset(book: RuleBook) -> None:
    decision = book.decide(event(resources=("web-0", "web-3")), "web-0")
    assert decision.handlers == ("k8s", "notify")
    assert decision.recovery == ("k8s",)


def test_short_freeze_rule_can_be_turned_off(tmp_path: Path) -> None:
    path = write(
        tmp_path / "r.toml",
        RULES.replace("[handlers.drain]", "ignore_freeze_under = 0\n[handlers.drain]", 1),
    )
    decision = RuleBook(load_config(path)).decide(event(event_type="Freeze", duration=5), "web-0")
    assert decision.rule == "no-rule"


def test_named_decision_survives_a_restart(book: RuleBook) -> None:
    named = book.named("user-reboot")
    assert named == book.decide(event(source="User"), "web-0")
    assert book.named("short-freeze") is not None and book.named("short-freeze").ignore  # type: ignore[union-attr]
    assert book.named("renamed-since") is None

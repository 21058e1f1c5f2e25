"""Ordered rules: the first rule that matches an event decides what the agent does.

A built-in first rule ignores short freezes (``ignore_freeze_under`` seconds, 10 by
default: a live migration's pause is shorter than any drain). An event no rule matches
is ignored too, and said so in the log.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from forewarn.agent.config_schema import AgentConfig, Approval, KubernetesSpec, OnCrash, RuleSpec
from forewarn.agent.events import EventView

__all__ = ["Decision", "RuleBook", "matches"]

SHORT_FREEZE = "short-freeze"
NO_RULE = "no-rule"


class Decision(NamedTuple):
    """What to do with one event: the rule's name and its action (empty when ignored)."""

    rule: str
    ignore: bool
    handlers: tuple[str, ...] = ()
    recovery: tuple[str, ...] = ()
    approval: Approval = Approval.NEVER
    parallel: bool = False
    act_minutes_before: float | None = None
    on_crash: OnCrash = OnCrash.RETRY


def _within(value: int, low: int | None, high: int | None) -> bool:
    return (low is None or value >= low) and (high is None or value <= high)


def _listed(values: Sequence[str], value: str) -> bool:
    return not values or value.lower() in (v.lower() for v in values)


def matches(rule: RuleSpec, event: EventView, vm_name: str) -> bool:
    """Whether ``rule``'s match fields all accept ``event`` as seen by ``vm_name``."""
    lists_me = event.affects(vm_name)
    return (
        _listed(rule.event_types, str(event.event_type))
        and _listed(rule.sources, str(event.source))
        and _listed(rule.statuses, str(event.status))
        and _within(event.duration_seconds, rule.min_duration, rule.max_duration)
        and (rule.this_vm is None or rule.this_vm == lists_me)
        and _within(len(event.resources), rule.min_vms, rule.max_vms)
    )


class RuleBook:
    """The configured rules in order, with the kubernetes undo added to recovery."""

    def __init__(self, config: AgentConfig) -> None:
        self._config = config
        self._undo = {
            name for name, spec in config.handlers.items() if isinstance(spec, KubernetesSpec)
        }

    def decide(self, event: EventView, vm_name: str) -> Decision:
        """The decision of the first matching rule (built-in short-freeze rule first)."""
        limit = self._config.ignore_freeze_under
        if limit > 0 and str(event.event_type) == "Freeze" and 0 <= event.duration_seconds < limit:
            return Decision(rule=SHORT_FREEZE, ignore=True)
        for index, rule in enumerate(self._config.rules):
            if matches(rule, event, vm_name):
                return self._decision(self._config.rule_name(index), rule)
        return Decision(rule=NO_RULE, ignore=True)

    def _decision(self, name: str, rule: RuleSpec) -> Decision:
        if rule.ignore:
            return Decision(rule=name, ignore=True)
        recovery = rule.recovery
        if recovery is None:  # by default, undo what the kubernetes preset did
            recovery = [h for h in rule.handlers if h in self._undo]
        return Decision(
            rule=name,
            ignore=False,
            handlers=tuple(rule.handlers),
            recovery=tuple(recovery),
            approval=rule.approval,
            parallel=rule.parallel,
            act_minutes_before=rule.act_minutes_before,
            on_crash=rule.on_crash,
        )

    def named(self, name: str) -> Decision | None:
        """The decision a rule of that name gives (after a restart, from the saved name)."""
        if name in (SHORT_FREEZE, NO_RULE):
            return Decision(rule=name, ignore=True)
        for index, rule in enumerate(self._config.rules):
            if self._config.rule_name(index) == name:
                return self._decision(name, rule)
        return None

"""``[kubernetes]`` (or ``FOREWARN_AGENT_KUBERNETES_*``): one table for a node agent.

A DaemonSet should not need a templated file: the table is a ``kubernetes`` handler
named ``kubernetes`` plus a last rule, also named ``kubernetes``, that runs it for this
VM's events of ``event_types`` (the file's own rules, if any, match first).
"""

from __future__ import annotations

import dataclasses

from forewarn.agent.config_schema import AgentConfig, ConfigError, KubernetesSpec, RuleSpec

__all__ = ["NAME", "with_kubernetes_table"]

NAME = "kubernetes"
_RULE_ONLY = {"enabled", "event_types", "approval", "act_minutes_before"}


def with_kubernetes_table(config: AgentConfig) -> AgentConfig:
    """``config`` with the table's handler and rule added (unchanged without the table)."""
    table = config.kubernetes
    if table is None or not table.enabled:
        return config
    if NAME in config.handlers:
        raise ConfigError(f"handlers.{NAME}: the name is taken by the [kubernetes] table")
    if any(rule.name == NAME for rule in config.rules):
        raise ConfigError(f"rules: the name {NAME!r} is taken by the [kubernetes] table")
    fields = {
        f.name: getattr(table, f.name)
        for f in dataclasses.fields(KubernetesSpec)
        if f.name not in _RULE_ONLY
    }
    rule = RuleSpec(
        name=NAME,
        event_types=list(table.event_types),
        this_vm=True,
        handlers=[NAME],
        approval=table.approval,
        act_minutes_before=table.act_minutes_before,
    )
    return dataclasses.replace(
        config,
        handlers={**config.handlers, NAME: KubernetesSpec(**fields)},
        rules=[*config.rules, rule],
    )

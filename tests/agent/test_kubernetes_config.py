"""``[kubernetes]`` and ``FOREWARN_AGENT_KUBERNETES_*``: a node agent from the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from forewarn.agent.config_layers import load_config
from forewarn.agent.config_schema import Approval, ConfigError, KubernetesSpec, RuleSpec
from forewarn.agent.rules import RuleBook
from tests.agent.helpers import event

DAEMONSET = {
    "FOREWARN_AGENT_STATE_PATH": "/var/lib/forewarn-agent/state.db",
    "FOREWARN_AGENT_KUBERNETES_NODE": "aks-np-1234-vmss00000d",
    "FOREWARN_AGENT_KUBERNETES_CORDON_ONLY": "false",
    "FOREWARN_AGENT_KUBERNETES_EXCLUDE_FROM_LB": "true",
    "FOREWARN_AGENT_KUBERNETES_CONDITION": "1",
    "FOREWARN_AGENT_KUBERNETES_PDB_TIMEOUT": "120",
    "FOREWARN_AGENT_KUBERNETES_EVENT_TYPES": "Reboot, Redeploy,Preempt",
    "FOREWARN_AGENT_KUBERNETES_APPROVAL": "after-handlers",
}


def test_the_environment_alone_makes_a_node_agent() -> None:
    config = load_config(None, DAEMONSET)
    assert config.handlers == {
        "kubernetes": KubernetesSpec(
            node="aks-np-1234-vmss00000d", exclude_from_lb=True, condition=True, pdb_timeout=120
        )
    }
    assert config.rules == [
        RuleSpec(
            name="kubernetes",
            event_types=["Reboot", "Redeploy", "Preempt"],
            this_vm=True,
            handlers=["kubernetes"],
            approval=Approval.AFTER_HANDLERS,
        )
    ]
    book = RuleBook(config)
    reboot = book.decide(event("E1", event_type="Reboot", resources=("web-0",)), "web-0")
    assert (reboot.rule, reboot.handlers, reboot.recovery) == (
        "kubernetes", ("kubernetes",), ("kubernetes",),
    )  # fmt: skip
    other = book.decide(event("E2", event_type="Reboot", resources=("web-1",)), "web-0")
    assert other.ignore  # another VM's event


def test_the_defaults_cover_every_event_type_and_approve_nothing() -> None:
    config = load_config(None, {"FOREWARN_AGENT_KUBERNETES_ENABLED": "true"})
    [rule] = config.rules
    assert rule.event_types == ["Reboot", "Redeploy", "Freeze", "Preempt", "Terminate"]
    assert rule.approval == Approval.NEVER
    assert config.handlers["kubernetes"] == KubernetesSpec()


def test_the_file_table_with_the_environment_over_it(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text(
        '[kubernetes]\ncordon_only = true\nnode = "from-file"\n\n'
        '[handlers.hook]\ntype = "exec"\nargv = ["/bin/true"]\n\n'
        '[[rules]]\nname = "preempt"\nevent_types = ["Preempt"]\nhandlers = ["hook"]\n'
    )
    config = load_config(path, {"FOREWARN_AGENT_KUBERNETES_NODE": "from-env"})
    assert config.handlers["kubernetes"] == KubernetesSpec(node="from-env", cordon_only=True)
    assert [r.name for r in config.rules] == ["preempt", "kubernetes"]  # the file's first
    off = load_config(path, {"FOREWARN_AGENT_KUBERNETES_ENABLED": "false"})
    assert list(off.handlers) == ["hook"] and [r.name for r in off.rules] == ["preempt"]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"FOREWARN_AGENT_KUBERNETES_TAINT_EFFECT": "Never"}, "kubernetes.taint_effect: must be"),
        ({"FOREWARN_AGENT_KUBERNETES_NODE": "AKS_node"}, "kubernetes.node: 'AKS_node' is not a"),
        ({"FOREWARN_AGENT_KUBERNETES_EVENTS_NAMESPACE": "x" * 64},
         "kubernetes.events_namespace: 'xxx"),
        ({"FOREWARN_AGENT_KUBERNETES_APPROVAL": "sometimes"},
         "FOREWARN_AGENT_KUBERNETES_APPROVAL='sometimes': invalid enum value 'sometimes'"),
        ({"FOREWARN_AGENT_KUBERNETES_CONDITION": "maybe"},
         "FOREWARN_AGENT_KUBERNETES_CONDITION='maybe': expected `bool`"),
        ({"FOREWARN_AGENT_KUBERNETES_NODES": "x"},
         "FOREWARN_AGENT_KUBERNETES_NODES: unknown setting"),
        ({"FOREWARN_AGENT_KUBERNETES_EVENT_TYPES": " , "},
         "kubernetes.event_types: must list at least one event type"),
        ({"FOREWARN_AGENT_KUBERNETES_APPROVAL": "coordinated"},
         r"rules\[0\].approval: coordinated needs a \[coordination\] table"),
    ],
)  # fmt: skip
def test_mistakes_are_named(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(None, env)


def test_the_table_does_not_take_a_name_already_used(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text('[handlers.kubernetes]\ntype = "exec"\nargv = ["/bin/true"]\n')
    with pytest.raises(ConfigError, match=r"handlers\.kubernetes: the name is taken by the"):
        load_config(path, {"FOREWARN_AGENT_KUBERNETES_ENABLED": "true"})
    assert list(load_config(path, {}).handlers) == ["kubernetes"]  # without the table: fine

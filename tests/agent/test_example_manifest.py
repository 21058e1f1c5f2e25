"""The example DaemonSet: its environment alone is a valid node agent, its RBAC covers
every kubectl call the handler makes, and it reaches 169.254.169.254 from the node."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from forewarn.agent.config_layers import load_config
from forewarn.agent.config_schema import Approval, KubernetesSpec

MANIFEST = Path(__file__).resolve().parents[2] / "examples" / "kubernetes" / "forewarn-agent.yaml"


def documents() -> dict[str, dict[str, Any]]:
    return {doc["kind"]: doc for doc in yaml.safe_load_all(MANIFEST.read_text())}


def test_the_daemonset_environment_is_the_whole_configuration() -> None:
    pod = documents()["DaemonSet"]["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["command"] == ["forewarn", "agent", "run"]  # no -c: no file
    given = {"NODE_NAME": "aks-np-1234-vmss00000d", "NODE_IP": "10.224.0.4"}
    env: dict[str, str] = {}
    for var in container["env"]:
        if "value" in var:  # Kubernetes expands $(VAR) of the variables above it
            env[var["name"]] = re.sub(r"\$\((\w+)\)", lambda m: given[m[1]], var["value"])
    config = load_config(None, env)
    assert config.handlers["kubernetes"] == KubernetesSpec(
        node="aks-np-1234-vmss00000d", grace_period=30, exclude_from_lb=True, condition=True
    )
    [rule] = config.rules
    assert rule.approval == Approval.AFTER_HANDLERS and rule.this_vm is True
    assert config.metrics_bind == "10.224.0.4:9465"
    assert pod["hostNetwork"] is True
    probes = {container[p]["httpGet"]["port"] for p in ("readinessProbe", "livenessProbe")}
    assert probes == {9465}


def test_the_role_allows_what_the_handler_does() -> None:
    docs = documents()
    allowed = {
        (resource, verb)
        for rule in docs["ClusterRole"]["rules"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    needed = {
        ("nodes", "get"), ("nodes", "patch"),  # get node, taint, cordon, annotate, label
        ("nodes/status", "patch"),  # the condition
        ("events", "create"),
        ("pods", "list"), ("pods/eviction", "create"), ("daemonsets", "get"),  # drain
    }  # fmt: skip
    assert needed <= allowed
    binding = docs["ClusterRoleBinding"]
    account = docs["ServiceAccount"]["metadata"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", **account}]
    pod = docs["DaemonSet"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == account["name"]

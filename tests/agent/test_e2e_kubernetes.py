"""A real agent process configured as a DaemonSet configures it: the environment only.

The VM is a scale-set instance (``workers_0``), so the node is ``workers000000``; the
fake kubectl keeps the cluster, so the test reads what a real one would hold.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.agent.agentproc import AgentProcess
from tests.agent.conftest import Fleet
from tests.agent.kubefake import FakeCluster
from tests.support.waiting import wait_until

NODE = "workers000000"
LB = "node.kubernetes.io/exclude-from-external-load-balancers"


def test_a_daemonset_agent_from_the_environment_alone(
    fleet: Fleet, start_agent: Callable[..., AgentProcess], tmp_path: Path
) -> None:
    cluster = FakeCluster(tmp_path)
    cluster.seed(NODE)
    env = cluster.env(
        FOREWARN_AGENT_LOCAL_ADDRESS=fleet.address["workers_0"],
        FOREWARN_AGENT_POLL_INTERVAL="0.2",
        FOREWARN_AGENT_SAFETY_MARGIN="60",
        FOREWARN_AGENT_LOG_FORMAT="json",
        FOREWARN_AGENT_KUBERNETES_EVENT_TYPES="Reboot,Redeploy",
        FOREWARN_AGENT_KUBERNETES_APPROVAL="after-handlers",
        FOREWARN_AGENT_KUBERNETES_GRACE_PERIOD="15",
        FOREWARN_AGENT_KUBERNETES_PDB_TIMEOUT="120",
        FOREWARN_AGENT_KUBERNETES_EXCLUDE_FROM_LB="true",
        FOREWARN_AGENT_KUBERNETES_CONDITION="true",
    )
    agent = start_agent("workers_0", None, fleet.url, env)
    [event_id] = fleet.trigger("user-reboot", "workers_0")["event_ids"]
    wait_until(lambda: fleet.status(event_id) == "Started", what="the approval")
    calls = cluster.calls()
    assert calls[1].startswith(f"patch node {NODE} --subresource=status --type=strategic -p ")
    assert [calls[0], *calls[2:]] == [
        f"get node {NODE} -o json",
        "create -f -",
        f"taint nodes {NODE} forewarn.io/scheduled-event=true:NoSchedule --overwrite",
        f"annotate node {NODE} forewarn.io/tainted={event_id} forewarn.io/cordoned={event_id} "
        f"forewarn.io/excluded-from-lb={event_id} --overwrite",
        f"cordon {NODE}",
        f"label node {NODE} {LB}=true --overwrite",
        f"drain {NODE} --grace-period=15 --timeout=120s --ignore-daemonsets --delete-emptydir-data",
        "create -f -",
    ]
    node = cluster.node(NODE)
    assert node["unschedulable"] is True and node["labels"] == {LB: "true"}
    [condition] = node["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "VMEventScheduled", "True", "VMEventScheduled",
    )  # fmt: skip
    assert condition["message"].startswith("Reboot Scheduled: ")
    assert ". DurationInSeconds: " in condition["message"]

    fleet.advance(601)
    agent.wait_log("recovery done", event_id=event_id, result="ok")
    calls = cluster.calls()[9:]
    assert calls[1].startswith(f"patch node {NODE} --subresource=status --type=strategic -p ")
    assert [calls[0], *calls[2:]] == [
        f"get node {NODE} -o json",
        f"uncordon {NODE}",
        f"label node {NODE} {LB}-",
        f"annotate node {NODE} forewarn.io/tainted- forewarn.io/cordoned- "
        "forewarn.io/excluded-from-lb-",
        f"taint nodes {NODE} forewarn.io/scheduled-event:NoSchedule-",
        "create -f -",
    ]
    node = cluster.node(NODE)
    assert (node["unschedulable"], node["labels"], node["annotations"], node["taints"]) == (
        False, {}, {}, [],
    )  # fmt: skip
    assert node["conditions"][0]["status"] == "False"
    assert [(kind, reason) for _, kind, reason, _ in cluster.events()] == [
        ("Normal", "ScheduledEvent"), ("Normal", "CordonAndDrain"), ("Normal", "Uncordon"),
    ]  # fmt: skip
    assert not (agent.workdir / "agent.toml").exists()  # no file anywhere

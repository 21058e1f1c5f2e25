"""The kubernetes handler against the recording fake kubectl: every call, in order, and
what the (fake) cluster holds afterwards; the node name of a scale-set instance."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from forewarn.agent.clock import AgentClock
from forewarn.agent.config_schema import KubernetesSpec
from forewarn.agent.events import EventView
from forewarn.agent.handlers import HandlerContext, HandlerFailed, KubernetesHandler
from forewarn.agent.handlers.kubernetes.nodename import node_name
from tests.agent.helpers import event
from tests.agent.kubefake import FakeCluster

NOT_BEFORE = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
NOW = datetime(2030, 1, 2, 2, 0, 0, tzinfo=UTC).timestamp()
EVENT = event(
    "E1",
    event_type="Reboot",
    resources=("web-0",),
    not_before=NOT_BEFORE.timestamp(),
    description="Host server is undergoing maintenance.",
    duration=300,
)
TAINT = "taint nodes web-0 forewarn.io/scheduled-event=true:NoSchedule --overwrite"
UNTAINT = "taint nodes web-0 forewarn.io/scheduled-event:NoSchedule-"
MARK = "annotate node web-0 forewarn.io/tainted=E1 forewarn.io/cordoned=E1 --overwrite"
UNMARK = "annotate node web-0 forewarn.io/tainted- forewarn.io/cordoned-"
DRAIN = "drain web-0 --grace-period=20 --timeout=120s --ignore-daemonsets --delete-emptydir-data"


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeCluster:
    fake = FakeCluster(tmp_path)
    for name, value in fake.env().items():
        monkeypatch.setenv(name, value)
    return fake


def context(
    phase: str = "prepare", seconds: float = 200.0, vm: str = "web-0", ev: EventView = EVENT
) -> HandlerContext:
    clock = AgentClock(wall=lambda: NOW)
    return HandlerContext(
        event=ev,
        vm_name=vm,
        phase=phase,
        deadline=NOT_BEFORE - timedelta(seconds=10),
        expires=clock.monotonic() + seconds,
        clock=clock,
    )


def handler(**options: object) -> KubernetesHandler:
    spec = KubernetesSpec(grace_period=20, pdb_timeout=120, **options)  # type: ignore[arg-type]
    return KubernetesHandler("node", spec)


async def test_cordons_drains_marks_then_undoes_exactly_that(cluster: FakeCluster) -> None:
    k8s = handler()
    assert await k8s.run(context()) == "node web-0 tainted, cordoned and drained"
    during = cluster.node("web-0")
    assert during["unschedulable"] is True
    assert during["annotations"] == {"forewarn.io/tainted": "E1", "forewarn.io/cordoned": "E1"}
    assert await k8s.run(context("recover")) == "node web-0 uncordoned and untainted"
    assert cluster.calls() == [
        "get node web-0 -o json",
        "create -f -",
        TAINT,
        MARK,
        "cordon web-0",
        DRAIN,
        "create -f -",
        "get node web-0 -o json",
        "uncordon web-0",
        UNMARK,
        UNTAINT,
        "create -f -",
    ]
    after = cluster.node("web-0")
    assert (after["unschedulable"], after["annotations"], after["taints"]) == (False, {}, [])
    message = "Reboot Scheduled: Wed, 02 Jan 2030 03:04:05 GMT. DurationInSeconds: 300. " \
        "Host server is undergoing maintenance."  # fmt: skip
    assert cluster.events() == [
        ("web-0", "Normal", "ScheduledEvent", message),
        ("web-0", "Normal", "CordonAndDrain", "node web-0 tainted, cordoned and drained for E1"),
        ("web-0", "Normal", "Uncordon", "node web-0 uncordoned and untainted after E1"),
    ]
    first = cluster.state()["events"][0]
    assert first["metadata"]["namespace"] == "default"
    assert first["involvedObject"] == {"apiVersion": "v1", "kind": "Node", "name": "web-0",
                                       "uid": "web-0"}  # fmt: skip
    assert first["source"] == {"component": "forewarn-agent", "host": "web-0"}
    assert first["firstTimestamp"] == "2030-01-02T02:00:00Z"


async def test_a_node_cordoned_by_hand_is_drained_but_stays_cordoned(
    cluster: FakeCluster,
) -> None:
    cluster.seed("web-0", unschedulable=True)
    k8s = handler(events=False)
    detail = await k8s.run(context())
    assert detail == "node web-0 tainted, left cordoned (cordoned by hand) and drained"
    detail = await k8s.run(context("recover"))
    assert detail == "node web-0 untainted and left cordoned (not cordoned by this agent)"
    assert cluster.calls() == [
        "get node web-0 -o json", TAINT, "annotate node web-0 forewarn.io/tainted=E1 --overwrite",
        DRAIN, "get node web-0 -o json", "annotate node web-0 forewarn.io/tainted-", UNTAINT,
    ]  # fmt: skip
    assert cluster.node("web-0")["unschedulable"] is True
    assert cluster.node("web-0")["annotations"] == {}
    assert cluster.events() == []


async def test_a_restart_after_cordoning_still_uncordons(cluster: FakeCluster) -> None:
    """The mark is on the node: an agent that died after cordoning finds it and re-does."""
    cluster.seed("web-0", unschedulable=True, annotations={"forewarn.io/cordoned": "E1"})
    k8s = handler(events=False)
    assert await k8s.run(context()) == "node web-0 tainted, cordoned and drained"
    assert await k8s.run(context("recover")) == "node web-0 uncordoned and untainted"
    assert cluster.calls()[2:4] == [
        "annotate node web-0 forewarn.io/tainted=E1 --overwrite", "cordon web-0",
    ]  # fmt: skip
    assert cluster.node("web-0")["unschedulable"] is False


REDEPLOY = event(
    "E1", event_type="Redeploy", resources=("web-0",), not_before=NOT_BEFORE.timestamp(),
    description="degraded hardware",
)  # fmt: skip
REBOOT = event("E2", event_type="Reboot", resources=("web-0",), not_before=NOT_BEFORE.timestamp())


async def test_a_second_event_keeps_the_node_out_until_the_last_one_recovers(
    cluster: FakeCluster,
) -> None:
    """A Redeploy days ahead, then a user's reboot: the reboot's recovery must not put the
    node back in service while the Redeploy still holds it."""
    k8s = handler()  # the DaemonSet's defaults
    await k8s.run(context(ev=REDEPLOY))
    await k8s.run(context(ev=REBOOT))
    held = {"forewarn.io/tainted": "E1,E2", "forewarn.io/cordoned": "E1,E2"}
    assert cluster.node("web-0")["annotations"] == held
    detail = await k8s.run(context("recover", ev=REBOOT))
    assert detail == "node web-0 kept tainted and cordoned (still held by E1)"
    node = cluster.node("web-0")
    assert node["unschedulable"] is True
    assert node["taints"] == ["forewarn.io/scheduled-event=true:NoSchedule"]
    assert node["annotations"] == {"forewarn.io/tainted": "E1", "forewarn.io/cordoned": "E1"}
    assert cluster.events()[-1] == (
        "web-0", "Normal", "StillHeld",
        "node web-0 kept tainted and cordoned (still held by E1) after E2",
    )  # fmt: skip
    assert await k8s.run(context("recover", ev=REDEPLOY)) == "node web-0 uncordoned and untainted"
    node = cluster.node("web-0")
    assert (node["unschedulable"], node["annotations"], node["taints"]) == (False, {}, [])


async def test_the_first_event_recovering_first_also_leaves_the_second_holding(
    cluster: FakeCluster,
) -> None:
    k8s = handler(events=False, exclude_from_lb=True, condition=True, cordon_only=True)
    await k8s.run(context(ev=REDEPLOY))
    await k8s.run(context(ev=REBOOT))
    detail = await k8s.run(context("recover", ev=REDEPLOY))
    assert detail == (
        "node web-0 kept tainted, cordoned and excluded from load balancers (still held by E2)"
    )
    node = cluster.node("web-0")
    label = "node.kubernetes.io/exclude-from-external-load-balancers"
    assert (node["unschedulable"], node["labels"]) == (True, {label: "true"})
    assert node["conditions"][0]["status"] == "True"  # not cleared while E2 is scheduled
    await k8s.run(context("recover", ev=REBOOT))
    node = cluster.node("web-0")
    assert (node["unschedulable"], node["labels"], node["annotations"]) == (False, {}, {})
    assert node["conditions"][0]["status"] == "False"


async def test_a_node_cordoned_by_hand_keeps_the_taint_while_any_event_holds_it(
    cluster: FakeCluster,
) -> None:
    cluster.seed("web-0", unschedulable=True)
    k8s = handler(events=False, cordon_only=True)
    await k8s.run(context(ev=REDEPLOY))
    await k8s.run(context(ev=REBOOT))
    detail = await k8s.run(context("recover", ev=REDEPLOY))
    assert detail == (
        "node web-0 kept tainted (still held by E2) and left cordoned (not cordoned by this agent)"
    )
    assert cluster.node("web-0")["taints"] == ["forewarn.io/scheduled-event=true:NoSchedule"]
    await k8s.run(context("recover", ev=REBOOT))
    node = cluster.node("web-0")
    assert (node["unschedulable"], node["annotations"], node["taints"]) == (True, {}, [])


async def test_two_events_prepared_at_once_both_hold_the_marks(cluster: FakeCluster) -> None:
    """The agent runs each event's handlers concurrently: neither may lose the other's id."""
    k8s = handler(events=False, cordon_only=True)
    await asyncio.gather(k8s.run(context(ev=REDEPLOY)), k8s.run(context(ev=REBOOT)))
    marks = cluster.node("web-0")["annotations"]
    assert sorted(marks["forewarn.io/cordoned"].split(",")) == ["E1", "E2"]
    assert sorted(marks["forewarn.io/tainted"].split(",")) == ["E1", "E2"]
    await k8s.run(context("recover", ev=REBOOT))
    assert cluster.node("web-0")["unschedulable"] is True


async def test_cordon_only_never_drains(cluster: FakeCluster) -> None:
    k8s = handler(cordon_only=True)
    assert await k8s.run(context()) == "node web-0 tainted and cordoned (cordon only)"
    assert await k8s.run(context("recover")) == "node web-0 uncordoned and untainted"
    assert not any(call.startswith("drain") for call in cluster.calls())
    assert cluster.calls()[:6] == [
        "get node web-0 -o json",
        "create -f -",
        TAINT,
        MARK,
        "cordon web-0",
        "create -f -",
    ]
    assert [reason for _, _, reason, _ in cluster.events()] == [
        "ScheduledEvent", "Cordon", "Uncordon",
    ]  # fmt: skip


async def test_events_go_to_the_namespace_configured(cluster: FakeCluster) -> None:
    k8s = handler(cordon_only=True, events_namespace="node-ops")
    await k8s.run(context())
    await k8s.run(context("recover"))
    written = cluster.state()["events"]
    assert [e["reason"] for e in written] == ["ScheduledEvent", "Cordon", "Uncordon"]
    assert {e["metadata"]["namespace"] for e in written} == {"node-ops"}


async def test_excluded_from_load_balancers_while_out_then_back(cluster: FakeCluster) -> None:
    k8s = handler(exclude_from_lb=True, events=False)
    detail = await k8s.run(context())
    assert detail == "node web-0 tainted, cordoned, excluded from load balancers and drained"
    label = "node.kubernetes.io/exclude-from-external-load-balancers"
    assert cluster.node("web-0")["labels"] == {label: "true"}
    detail = await k8s.run(context("recover"))
    assert detail == "node web-0 uncordoned, back in load balancers and untainted"
    assert cluster.calls() == [
        "get node web-0 -o json",
        TAINT,
        "annotate node web-0 forewarn.io/tainted=E1 forewarn.io/cordoned=E1 "
        "forewarn.io/excluded-from-lb=E1 --overwrite",
        "cordon web-0",
        f"label node web-0 {label}=true --overwrite",
        DRAIN,
        "get node web-0 -o json",
        "uncordon web-0",
        f"label node web-0 {label}-",
        "annotate node web-0 forewarn.io/tainted- forewarn.io/cordoned- "
        "forewarn.io/excluded-from-lb-",
        UNTAINT,
    ]
    assert cluster.node("web-0")["labels"] == {}


async def test_a_load_balancer_label_set_by_hand_is_left_alone(cluster: FakeCluster) -> None:
    label = "node.kubernetes.io/exclude-from-external-load-balancers"
    cluster.seed("web-0", labels={label: "true"})
    k8s = handler(exclude_from_lb=True, events=False, cordon_only=True)
    assert await k8s.run(context()) == "node web-0 tainted and cordoned (cordon only)"
    await k8s.run(context("recover"))
    assert not any(call.startswith("label") for call in cluster.calls())
    assert cluster.node("web-0")["labels"] == {label: "true"}


async def test_the_node_problem_detector_condition_is_set_then_cleared(
    cluster: FakeCluster,
) -> None:
    k8s = handler(condition=True, events=False, cordon_only=True)
    await k8s.run(context())
    set_ = {
        "type": "VMEventScheduled",
        "status": "True",
        "reason": "VMEventScheduled",
        "message": "Reboot Scheduled: Wed, 02 Jan 2030 03:04:05 GMT. DurationInSeconds: 300. "
        "Host server is undergoing maintenance.",
        "lastHeartbeatTime": "2030-01-02T02:00:00Z",
        "lastTransitionTime": "2030-01-02T02:00:00Z",
    }
    assert cluster.node("web-0")["conditions"] == [set_]
    patch = json.dumps({"status": {"conditions": [set_]}}, separators=(",", ":"))
    assert cluster.calls()[1] == (
        f"patch node web-0 --subresource=status --type=strategic -p {patch}"
    )
    await k8s.run(context("recover"))
    [cleared] = cluster.node("web-0")["conditions"]
    assert (cleared["status"], cleared["reason"], cleared["message"]) == (
        "False", "NoVMEventScheduled", "VM has no scheduled event",
    )  # fmt: skip
    assert cluster.calls()[5:7] == ["get node web-0 -o json", cluster.calls()[6]]
    assert cluster.calls()[6].startswith("patch node web-0 --subresource=status --type=strategic")


async def test_events_and_condition_refused_by_rbac_do_not_stop_the_drain(
    cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_KUBECTL_FORBID", "create")
    detail = await handler().run(context())
    assert detail.startswith("node web-0 tainted, cordoned and drained; event ScheduledEvent "
                             "not written: kubectl create exit status 1: Error from server "
                             "(Forbidden)")  # fmt: skip
    assert cluster.node("web-0")["unschedulable"] is True


async def test_a_failed_drain_is_a_warning_event_in_one_line(
    cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_KUBECTL_PDB", "1")
    with pytest.raises(HandlerFailed) as failed:
        await handler().run(context())
    assert "\n" not in str(failed.value)
    assert str(failed.value) == (
        "kubectl drain exit status 1: error when evicting pods/web-1: Cannot evict pod as it "
        "would violate the pod's disruption budget. / error: unable to drain node, aborting "
        "command..."
    )
    assert cluster.events()[-1] == ("web-0", "Warning", "CordonAndDrainFailed", str(failed.value))


async def test_the_drain_is_cut_to_the_time_left_and_global_flags_come_first(
    cluster: FakeCluster,
) -> None:
    spec = KubernetesSpec(
        node="aks-1", kubeconfig="/etc/kube", context="prod", pdb_timeout=600,
        ignore_daemonsets=False, delete_emptydir_data=False, events=False,
    )  # fmt: skip
    await KubernetesHandler("k8s", spec).run(context(seconds=45))
    calls = cluster.calls()
    assert all(c.startswith("--kubeconfig=/etc/kube --context=prod ") for c in calls)
    drain = calls[4]
    assert drain.startswith("--kubeconfig=/etc/kube --context=prod drain aks-1 --grace-period=-1")
    seconds = int(drain.split("--timeout=")[1].split("s")[0])
    assert 40 <= seconds <= 45
    assert "--ignore-daemonsets" not in drain and "--delete-emptydir-data" not in drain


async def test_pdbs_hold_the_drain_then_force(
    cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_KUBECTL_PDB", "1")
    forced = KubernetesHandler("k8s", KubernetesSpec(pdb_timeout=30, force=True, events=False))
    detail = await forced.run(context())
    assert detail == (
        "node web-0 tainted, cordoned and drained by force after PDBs held it for 30s"
    )
    drains = [c for c in cluster.calls() if c.startswith("drain")]
    assert drains[0].startswith("drain web-0 --grace-period=-1 --timeout=30s")
    assert "--disable-eviction --force" in drains[1]


async def test_untaint_of_a_missing_taint_is_fine(cluster: FakeCluster) -> None:
    detail = await handler(events=False).run(context("recover"))
    assert detail == "node web-0 untainted"
    assert cluster.calls() == ["get node web-0 -o json", UNTAINT]


async def test_without_kubectl_fails_clearly(tmp_path: Path) -> None:
    k8s = KubernetesHandler("k8s", KubernetesSpec(kubectl=str(tmp_path / "kubectl")))
    with pytest.raises(HandlerFailed, match=r"cannot run .*kubectl.*No such file"):
        await k8s.run(context())


# ---------------------------------------------------------------- node names


@pytest.mark.parametrize(
    ("vm", "node"),
    [
        ("aks-nodepool1-12345678-vmss_0", "aks-nodepool1-12345678-vmss000000"),
        ("aks-nodepool1-12345678-vmss_13", "aks-nodepool1-12345678-vmss00000d"),
        ("aks-nodepool1-12345678-vmss_36", "aks-nodepool1-12345678-vmss000010"),
        ("aks-np-1-vmss_2176782335", "aks-np-1-vmss" + "zzzzzz"),
        ("workers_1", "workers000001"),
        ("Web-0", "web-0"),  # a plain VM: its name, as the kubelet lowercases it
    ],
)
def test_the_node_name_of_a_vm(vm: str, node: str) -> None:
    assert node_name(vm) == node


def test_the_node_name_override_wins() -> None:
    assert node_name("aks-np-vmss_13", "custom-node") == "custom-node"


async def test_a_scale_set_instance_acts_on_its_aks_node(cluster: FakeCluster) -> None:
    await handler(events=False, cordon_only=True).run(context(vm="aks-np-1234-vmss_13"))
    assert cluster.calls()[:2] == [
        "get node aks-np-1234-vmss00000d -o json",
        "taint nodes aks-np-1234-vmss00000d forewarn.io/scheduled-event=true:NoSchedule "
        "--overwrite",
    ]

"""The ``kubernetes`` handler: take this node out of service before the event, back after.

prepare, one kubectl call a step, in this order:
``get node`` (what is there already), the ``VMEventScheduled`` condition (``condition``),
an Event saying why (``events``), ``taint`` (so nothing new lands), ``annotate`` (marks
what this agent is about to change), ``cordon``, the exclude-from-load-balancers label
(``exclude_from_lb``), then ``drain`` (not with ``cordon_only``) through the eviction API,
which honours PodDisruptionBudgets, for at most ``pdb_timeout`` seconds (never past the
handler's own limit); if that fails and ``force`` is set, a second drain bypasses PDBs
(``--disable-eviction --force``) with the time left; last, an Event saying what was done.

recover: ``get node``, the condition cleared, ``uncordon`` and the label removed only where
the marks say this agent made them (a node cordoned by hand stays cordoned), the marks
removed, the taint removed (a taint already gone is fine), an Event. The marks live on the
node, so a restarted agent (or another pod of the DaemonSet) undoes the right things.
Events and the condition are best-effort: a failure is told in the detail, not fatal.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from forewarn.agent.config_schema import KubernetesSpec
from forewarn.agent.handlers.base import Handler, HandlerContext, HandlerFailed
from forewarn.agent.handlers.kubernetes.kubectl import Kubectl
from forewarn.agent.handlers.kubernetes.nodename import node_name
from forewarn.agent.handlers.kubernetes.objects import (
    CORDONED,
    EXCLUDE_LB,
    LB_EXCLUDED,
    condition_patch,
    event_object,
    npd_message,
)

__all__ = ["KubernetesHandler"]

#: Seconds kept back from the PDB-honouring drain for the forced one.
FORCE_WINDOW = 30.0


def _annotations(node: dict[str, Any]) -> dict[str, str]:
    found = (node.get("metadata") or {}).get("annotations") or {}
    return found if isinstance(found, dict) else {}


def _labels(node: dict[str, Any]) -> dict[str, str]:
    found = (node.get("metadata") or {}).get("labels") or {}
    return found if isinstance(found, dict) else {}


def _unschedulable(node: dict[str, Any]) -> bool:
    return bool((node.get("spec") or {}).get("unschedulable"))


def _joined(done: list[str]) -> str:
    return done[0] if len(done) == 1 else f"{', '.join(done[:-1])} and {done[-1]}"


class KubernetesHandler(Handler):
    """kubectl against this VM's node (``node``, else derived from the VM's name)."""

    kind = "kubernetes"

    def __init__(self, name: str, spec: KubernetesSpec) -> None:
        super().__init__(name, spec.timeout, spec.on_receipt)
        self.spec = spec
        self.kubectl = Kubectl(spec.kubectl, spec.kubeconfig, spec.context)

    def node(self, ctx: HandlerContext) -> str:
        """The node's name: the override, else the one the kubelet registered."""
        return node_name(ctx.vm_name, self.spec.node)

    async def _best_effort(self, what: str, notes: list[str], call: Awaitable[None]) -> None:
        try:
            await call
        except HandlerFailed as exc:
            notes.append(f"{what} not written: {exc}")

    async def _event(
        self, ctx: HandlerContext, node: str, reason: str, message: str, notes: list[str],
        warning: bool = False,
    ) -> None:  # fmt: skip
        if self.spec.events:
            obj = event_object(
                node, reason, message, ctx.clock.time(), warning,
                namespace=self.spec.events_namespace,
            )  # fmt: skip
            await self._best_effort(f"event {reason}", notes, self.kubectl.create(obj))

    async def _condition(
        self, ctx: HandlerContext, node: str, scheduled: bool, notes: list[str]
    ) -> None:
        if self.spec.condition:
            patch = condition_patch(ctx.event if scheduled else None, ctx.clock.time())
            call = self.kubectl.patch_status(node, patch)
            await self._best_effort("condition VMEventScheduled", notes, call)

    def _drain_args(self, node: str, timeout: float, forced: bool) -> list[str]:
        spec = self.spec
        args = ["drain", node, f"--grace-period={spec.grace_period}", f"--timeout={int(timeout)}s"]
        if spec.ignore_daemonsets:
            args.append("--ignore-daemonsets")
        if spec.delete_emptydir_data:
            args.append("--delete-emptydir-data")
        if forced:
            args += ["--disable-eviction", "--force"]
        return args

    async def _drain(self, ctx: HandlerContext, node: str) -> str:
        spec = self.spec
        reserve = min(FORCE_WINDOW, ctx.time_left() / 4) if spec.force else 0.0
        window = max(1.0, min(spec.pdb_timeout, ctx.time_left() - reserve))
        try:
            await self.kubectl.run(*self._drain_args(node, window, forced=False))
            return "drained"
        except HandlerFailed as polite:
            if not spec.force:
                raise
            left = max(1.0, ctx.time_left() - 1.0)
            try:
                await self.kubectl.run(*self._drain_args(node, left, forced=True))
            except HandlerFailed as forced:
                raise HandlerFailed(f"{polite}; forced drain: {forced}") from None
            return f"drained by force after PDBs held it for {window:.0f}s"

    async def _take_out(self, ctx: HandlerContext, node: str, before: dict[str, Any]) -> str:
        spec, event_id = self.spec, ctx.event.event_id
        annotations = _annotations(before)
        ours = CORDONED in annotations or not _unschedulable(before)
        label = spec.exclude_from_lb and (
            LB_EXCLUDED in annotations or EXCLUDE_LB not in _labels(before)
        )
        await self.kubectl.run(
            "taint", "nodes", node, f"{spec.taint_key}={spec.taint_value}:{spec.taint_effect}",
            "--overwrite",
        )  # fmt: skip
        wanted = ((CORDONED, ours), (LB_EXCLUDED, label))
        marks = [f"{key}={event_id}" for key, mine in wanted if mine]
        if marks:
            await self.kubectl.run("annotate", "node", node, *marks, "--overwrite")
        if ours:
            await self.kubectl.run("cordon", node)
        if label:
            await self.kubectl.run("label", "node", node, f"{EXCLUDE_LB}=true", "--overwrite")
        done = ["tainted", "cordoned" if ours else "left cordoned (cordoned by hand)"]
        if label:
            done.append("excluded from load balancers")
        if spec.cordon_only:
            return f"node {node} {_joined(done)} (cordon only)"
        done.append(await self._drain(ctx, node))
        return f"node {node} {_joined(done)}"

    async def prepare(self, ctx: HandlerContext) -> str:
        node, notes = self.node(ctx), list[str]()
        before = await self.kubectl.node(node)
        await self._condition(ctx, node, True, notes)
        await self._event(ctx, node, "ScheduledEvent", npd_message(ctx.event), notes)
        reason = "Cordon" if self.spec.cordon_only else "CordonAndDrain"
        try:
            detail = await self._take_out(ctx, node, before)
        except HandlerFailed as exc:
            await self._event(ctx, node, f"{reason}Failed", str(exc), notes, warning=True)
            raise
        await self._event(ctx, node, reason, f"{detail} for {ctx.event.event_id}", notes)
        return "; ".join([detail, *notes])

    async def recover(self, ctx: HandlerContext) -> str:
        spec, node, notes = self.spec, self.node(ctx), list[str]()
        before = await self.kubectl.node(node)
        annotations = _annotations(before)
        await self._condition(ctx, node, False, notes)
        done: list[str] = []
        if CORDONED in annotations:
            await self.kubectl.run("uncordon", node)
            done.append("uncordoned")
        if LB_EXCLUDED in annotations:
            await self.kubectl.run("label", "node", node, f"{EXCLUDE_LB}-", ok_if="not found")
            done.append("back in load balancers")
        marks = [f"{key}-" for key in (CORDONED, LB_EXCLUDED) if key in annotations]
        if marks:
            await self.kubectl.run("annotate", "node", node, *marks)
        await self.kubectl.run(
            "taint", "nodes", node, f"{spec.taint_key}:{spec.taint_effect}-", ok_if="not found"
        )
        done.append("untainted")
        if CORDONED not in annotations and _unschedulable(before):
            done.append("left cordoned (not cordoned by this agent)")
        detail = f"node {node} {_joined(done)}"
        reason = "Uncordon" if CORDONED in annotations else "Untaint"
        await self._event(ctx, node, reason, f"{detail} after {ctx.event.event_id}", notes)
        return "; ".join([detail, *notes])

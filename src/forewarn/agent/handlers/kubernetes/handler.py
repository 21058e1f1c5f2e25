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
removed, the taint removed (a taint already gone is fine), an Event. Each mark lists the
events holding it (``marks.py``): while another event still holds the node (a Redeploy
days ahead, then a reboot), recovery only takes its own id off the marks and the node stays
out (condition, taint, cordon and all; Event ``StillHeld``). The marks live on the node,
so a restarted agent (or another pod of the DaemonSet) undoes the right things; one
handler reads and writes them for one event at a time.
Events and the condition are best-effort: a failure is told in the detail, not fatal.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

from forewarn.agent.config_schema import KubernetesSpec
from forewarn.agent.handlers.base import Handler, HandlerContext, HandlerFailed
from forewarn.agent.handlers.kubernetes.kubectl import Kubectl
from forewarn.agent.handlers.kubernetes.marks import Holders, holders, mark_args
from forewarn.agent.handlers.kubernetes.nodename import node_name
from forewarn.agent.handlers.kubernetes.objects import (
    CORDONED,
    EXCLUDE_LB,
    LB_EXCLUDED,
    TAINTED,
    condition_patch,
    event_object,
    npd_message,
)

__all__ = ["KubernetesHandler"]

T = TypeVar("T")

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


def _with(ids: list[str], event_id: str) -> list[str]:
    return ids if event_id in ids else [*ids, event_id]


def _joined(done: list[str]) -> str:
    return done[0] if len(done) == 1 else f"{', '.join(done[:-1])} and {done[-1]}"


class KubernetesHandler(Handler):
    """kubectl against this VM's node (``node``, else derived from the VM's name)."""

    kind = "kubernetes"

    def __init__(self, name: str, spec: KubernetesSpec) -> None:
        super().__init__(name, spec.timeout, spec.on_receipt)
        self.spec = spec
        self._marking = asyncio.Lock()
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

    async def _take_out(self, ctx: HandlerContext, node: str, before: dict[str, Any]) -> list[str]:
        spec, event_id = self.spec, ctx.event.event_id
        held = holders(_annotations(before))
        ours = bool(held.get(CORDONED)) or not _unschedulable(before)
        label = spec.exclude_from_lb and (
            bool(held.get(LB_EXCLUDED)) or EXCLUDE_LB not in _labels(before)
        )
        await self.kubectl.run(
            "taint", "nodes", node, f"{spec.taint_key}={spec.taint_value}:{spec.taint_effect}",
            "--overwrite",
        )  # fmt: skip
        taken = [key for key, mine in ((TAINTED, True), (CORDONED, ours), (LB_EXCLUDED, label))
                 if mine]  # fmt: skip
        after = {**held, **{key: _with(held.get(key, []), event_id) for key in taken}}
        marks = mark_args(held, after)
        if marks:
            await self.kubectl.run("annotate", "node", node, *marks, "--overwrite")
        if ours:
            await self.kubectl.run("cordon", node)
        if label:
            await self.kubectl.run("label", "node", node, f"{EXCLUDE_LB}=true", "--overwrite")
        done = ["tainted", "cordoned" if ours else "left cordoned (cordoned by hand)"]
        if label:
            done.append("excluded from load balancers")
        return done

    async def _failing(
        self, ctx: HandlerContext, node: str, reason: str, notes: list[str], call: Awaitable[T]
    ) -> T:
        """``call``'s result; its failure also told as a Warning Event ``<reason>Failed``."""
        try:
            return await call
        except HandlerFailed as exc:
            await self._event(ctx, node, f"{reason}Failed", str(exc), notes, warning=True)
            raise

    async def prepare(self, ctx: HandlerContext) -> str:
        spec, node, notes = self.spec, self.node(ctx), list[str]()
        reason = "Cordon" if spec.cordon_only else "CordonAndDrain"
        async with self._marking:  # one event's marks read and written at a time
            before = await self.kubectl.node(node)
            await self._condition(ctx, node, True, notes)
            await self._event(ctx, node, "ScheduledEvent", npd_message(ctx.event), notes)
            taking = self._take_out(ctx, node, before)
            done = await self._failing(ctx, node, reason, notes, taking)
        if spec.cordon_only:
            detail = f"node {node} {_joined(done)} (cordon only)"
        else:
            done.append(await self._failing(ctx, node, reason, notes, self._drain(ctx, node)))
            detail = f"node {node} {_joined(done)}"
        await self._event(ctx, node, reason, f"{detail} for {ctx.event.event_id}", notes)
        return "; ".join([detail, *notes])

    async def recover(self, ctx: HandlerContext) -> str:
        node, notes = self.node(ctx), list[str]()
        async with self._marking:
            before = await self.kubectl.node(node)
            held = holders(_annotations(before))
            after = {key: [i for i in ids if i != ctx.event.event_id] for key, ids in held.items()}
            others = list(dict.fromkeys(i for ids in after.values() for i in ids))
            if not others:
                await self._condition(ctx, node, False, notes)
            done = await self._put_back(node, before, held, after, others)
        reason = "Uncordon" if "uncordoned" in done else "StillHeld" if others else "Untaint"
        detail = f"node {node} {_joined(done)}"
        await self._event(ctx, node, reason, f"{detail} after {ctx.event.event_id}", notes)
        return "; ".join([detail, *notes])

    async def _put_back(
        self, node: str, before: dict[str, Any], held: Holders, after: Holders, others: list[str]
    ) -> list[str]:
        """Undo each mark no other event holds; ``others`` keep the taint (and theirs)."""
        spec, done, kept = self.spec, list[str](), list[str]()
        if CORDONED in held:
            if after[CORDONED]:
                kept.append("cordoned")
            else:
                await self.kubectl.run("uncordon", node)
                done.append("uncordoned")
        if LB_EXCLUDED in held:
            if after[LB_EXCLUDED]:
                kept.append("excluded from load balancers")
            else:
                await self.kubectl.run("label", "node", node, f"{EXCLUDE_LB}-", ok_if="not found")
                done.append("back in load balancers")
        marks = mark_args(held, after)
        if marks:
            overwrite = ["--overwrite"] if any(not m.endswith("-") for m in marks) else []
            await self.kubectl.run("annotate", "node", node, *marks, *overwrite)
        if others:
            kept.insert(0, "tainted")
            done.insert(0, f"kept {_joined(kept)} (still held by {', '.join(others)})")
        else:
            await self.kubectl.run(
                "taint", "nodes", node, f"{spec.taint_key}:{spec.taint_effect}-",
                ok_if="not found",
            )  # fmt: skip
            done.append("untainted")
        if CORDONED not in held and _unschedulable(before):
            done.append("left cordoned (not cordoned by this agent)")
        return done

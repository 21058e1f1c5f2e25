"""The ``kubernetes`` preset: take this node out of service before the event, back after.

prepare: ``taint`` (so nothing new lands), ``cordon``, then ``drain`` through the eviction
API, which honours PodDisruptionBudgets, for at most ``pdb_timeout`` seconds (never past
the handler's own limit). If that drain fails and ``force`` is set, a second drain
bypasses PDBs (``--disable-eviction --force``) with the time left.
recover: ``uncordon`` and remove the taint (a taint already gone is fine).
"""

from __future__ import annotations

import os

from forewarn.agent.config_schema import KubernetesSpec
from forewarn.agent.handlers.base import Handler, HandlerContext, HandlerFailed
from forewarn.agent.handlers.process import run_process, tail

__all__ = ["KubernetesHandler"]

#: Seconds kept back from the PDB-honouring drain for the forced one.
FORCE_WINDOW = 30.0


class KubernetesHandler(Handler):
    """kubectl against the node named ``node`` (default: this VM's name)."""

    kind = "kubernetes"

    def __init__(self, name: str, spec: KubernetesSpec) -> None:
        super().__init__(name, spec.timeout, spec.on_receipt)
        self.spec = spec

    def node(self, ctx: HandlerContext) -> str:
        return self.spec.node or ctx.vm_name

    def _base(self) -> list[str]:
        argv = [self.spec.kubectl]
        if self.spec.kubeconfig:
            argv.append(f"--kubeconfig={self.spec.kubeconfig}")
        if self.spec.context:
            argv.append(f"--context={self.spec.context}")
        return argv

    async def _kubectl(self, *args: str, ok_if: str = "") -> str:
        argv = [*self._base(), *args]
        try:
            result = await run_process(argv, env=dict(os.environ))
        except OSError as exc:
            raise HandlerFailed(str(exc.strerror or exc)) from None
        output = tail(result.stderr) or tail(result.stdout)
        if result.returncode != 0 and not (ok_if and ok_if in output):
            raise HandlerFailed(f"kubectl {args[0]} exit status {result.returncode}: {output}")
        return output

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

    async def prepare(self, ctx: HandlerContext) -> str:
        spec, node = self.spec, self.node(ctx)
        taint = f"{spec.taint_key}={spec.taint_value}:{spec.taint_effect}"
        await self._kubectl("taint", "nodes", node, taint, "--overwrite")
        await self._kubectl("cordon", node)
        reserve = min(FORCE_WINDOW, ctx.time_left() / 4) if spec.force else 0.0
        window = max(1.0, min(spec.pdb_timeout, ctx.time_left() - reserve))
        try:
            await self._kubectl(*self._drain_args(node, window, forced=False))
            return f"node {node} tainted, cordoned and drained"
        except HandlerFailed as polite:
            if not spec.force:
                raise
            left = max(1.0, ctx.time_left() - 1.0)
            try:
                await self._kubectl(*self._drain_args(node, left, forced=True))
            except HandlerFailed as forced:
                raise HandlerFailed(f"{polite}; forced drain: {forced}") from None
            return f"node {node} drained by force after PDBs held it for {window:.0f}s"

    async def recover(self, ctx: HandlerContext) -> str:
        spec, node = self.spec, self.node(ctx)
        await self._kubectl("uncordon", node)
        await self._kubectl(
            "taint", "nodes", node, f"{spec.taint_key}:{spec.taint_effect}-", ok_if="not found"
        )
        return f"node {node} uncordoned and untainted"

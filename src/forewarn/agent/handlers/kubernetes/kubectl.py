"""kubectl as the agent runs it: the global flags, the output cut for a log line.

kubectl (not a client library) because it is what the node's operators already trust,
configure and can replay by hand; every call is one process the handler ends on cancel.
"""

from __future__ import annotations

import json
import os
from typing import Any

from forewarn.agent.handlers.base import HandlerFailed
from forewarn.agent.handlers.process import run_process, tail

__all__ = ["Kubectl"]


def _one_line(text: str) -> str:
    return " / ".join(line.strip() for line in text.splitlines() if line.strip())


class Kubectl:
    """One kubectl program with its ``--kubeconfig`` and ``--context``."""

    def __init__(self, program: str, kubeconfig: str = "", context: str = "") -> None:
        self._base = [program]
        if kubeconfig:
            self._base.append(f"--kubeconfig={kubeconfig}")
        if context:
            self._base.append(f"--context={context}")

    async def run(self, *args: str, stdin: bytes | None = None, ok_if: str = "") -> str:
        """Run one command; ``HandlerFailed`` (one line) unless it exits 0 or says ``ok_if``."""
        try:
            result = await run_process([*self._base, *args], env=dict(os.environ), stdin=stdin)
        except OSError as exc:
            raise HandlerFailed(str(exc.strerror or exc)) from None
        if result.returncode == 0:
            return result.stdout.decode("utf-8", "replace")
        output = _one_line(tail(result.stderr) or tail(result.stdout))
        if ok_if and ok_if in output:
            return ""
        raise HandlerFailed(f"kubectl {args[0]} exit status {result.returncode}: {output}")

    async def node(self, name: str) -> dict[str, Any]:
        """The node object (``get node -o json``)."""
        text = await self.run("get", "node", name, "-o", "json")
        try:
            node = json.loads(text)
        except ValueError:
            raise HandlerFailed(f"kubectl get node {name}: not JSON: {text[:200]!r}") from None
        if not isinstance(node, dict):
            raise HandlerFailed(f"kubectl get node {name}: not an object")
        return node

    async def create(self, obj: dict[str, Any]) -> None:
        """``create -f -`` of one object."""
        await self.run("create", "-f", "-", stdin=json.dumps(obj).encode())

    async def patch_status(self, node: str, patch: dict[str, Any]) -> None:
        """A strategic-merge patch of the node's status subresource."""
        body = json.dumps(patch, separators=(",", ":"))
        await self.run(
            "patch", "node", node, "--subresource=status", "--type=strategic", "-p", body
        )

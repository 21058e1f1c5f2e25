"""The fake kubectl (``fake_kubectl``) installed first on a PATH, and what it recorded."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent


class FakeCluster:
    """A bin directory holding ``kubectl``, its call log and its cluster state file."""

    def __init__(self, root: Path) -> None:
        self.bin = root / "bin"
        self.bin.mkdir(parents=True, exist_ok=True)
        shutil.copy(HERE / "fake_kubectl", self.bin / "kubectl")
        self.log = root / "kubectl.log"
        self.state_path = root / "cluster.json"

    def env(self, **extra: str) -> dict[str, str]:
        """Variables that put this kubectl first and tell it where to record."""
        return {
            "PATH": f"{self.bin}{os.pathsep}{os.environ['PATH']}",
            "FAKE_KUBECTL_LOG": str(self.log),
            "FAKE_KUBECTL_STATE": str(self.state_path),
            **extra,
        }

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    def state(self) -> dict[str, Any]:
        if not self.state_path.exists():
            return {"nodes": {}, "events": []}
        state: dict[str, Any] = json.loads(self.state_path.read_text())
        return state

    def node(self, name: str) -> dict[str, Any]:
        node: dict[str, Any] = self.state()["nodes"][name]
        return node

    def events(self) -> list[tuple[str, str, str, str]]:
        """(node, type, reason, message) of each Event created, in order."""
        return [
            (e["involvedObject"]["name"], e["type"], e["reason"], e["message"])
            for e in self.state()["events"]
        ]

    def seed(self, name: str, **fields: Any) -> None:
        """A node as someone left it (``unschedulable=True``, ``labels={...}``...)."""
        state = self.state()
        node = {"unschedulable": False, "labels": {}, "annotations": {}, "taints": [],
                "conditions": [], **fields}  # fmt: skip
        state["nodes"][name] = node
        self.state_path.write_text(json.dumps(state))

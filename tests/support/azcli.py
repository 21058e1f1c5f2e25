"""The real Azure CLI (PyPI's ``azure-cli``), installed in a virtualenv of its own
(``.venv-az``: it pins its own azure-* versions), run as a user runs it against a
forewarn ARM listener: its own config directory, the local CA trusted.

Tests that need it skip when it is not installed, unless ``FOREWARN_REQUIRE_AZ=1``
(``.ci/run`` installs it and sets that, so CI never skips them).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

__all__ = ["AzCli", "az_executable"]

_ROOT = Path(__file__).resolve().parents[2]


def az_executable() -> str:
    """The ``az`` to run, or skip (fail under ``FOREWARN_REQUIRE_AZ=1``)."""
    given = os.environ.get("FOREWARN_AZ")
    path = Path(given) if given else _ROOT / ".venv-az" / "bin" / "az"
    if path.is_file():
        return str(path)
    why = f"the Azure CLI is not installed at {path} (.ci/run installs it)"
    if os.environ.get("FOREWARN_REQUIRE_AZ") == "1":
        pytest.fail(why)
    pytest.skip(why)


class AzCli:
    """``az`` with a config directory of its own, trusting ``ca``."""

    def __init__(self, home: Path, ca: str, extra_env: dict[str, str] | None = None) -> None:
        self.executable = az_executable()
        home.mkdir(parents=True, exist_ok=True)
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "AZURE_CONFIG_DIR": str(home / ".azure"),
            "REQUESTS_CA_BUNDLE": ca,
            "AZURE_CORE_COLLECT_TELEMETRY": "false",
            "AZURE_CORE_NO_COLOR": "true",
            "AZURE_CORE_ONLY_SHOW_ERRORS": "true",
            **(extra_env or {}),
        }

    def run(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.executable, *args],
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def ok(self, *args: str, env: dict[str, str] | None = None) -> Any:
        """Run a command that must succeed; its JSON output (None when it prints none)."""
        done = self.run(*args, "-o", "json", env=env)
        assert done.returncode == 0, f"az {' '.join(args)}: {done.stderr[-3000:]}"
        return json.loads(done.stdout) if done.stdout.strip() else None

    def fails(self, *args: str, env: dict[str, str] | None = None) -> str:
        """Run a command that must fail; its error output."""
        done = self.run(*args, "-o", "json", env=env)
        assert done.returncode != 0, f"az {' '.join(args)} succeeded: {done.stdout[-2000:]}"
        return done.stderr

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [self.executable, *args, "-o", "json"],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            stdin=subprocess.DEVNULL,
        )

    def register(self, arm_url: str) -> None:
        """The four set-up commands of the README: the cloud, then a login."""
        self.ok("cloud", "register", "-n", "forewarn", "--endpoint-resource-manager", arm_url)
        self.ok("cloud", "set", "-n", "forewarn")
        self.ok("config", "set", "core.instance_discovery=false")

"""Running ``forewarn conformance`` as a user does, and the endpoints it is run against."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

#: Every rule checked without --follow (and with --burst).
from forewarn.conformance.rules import RULES
from tests.conformance.mockserver import MockEndpoint
from tests.support.cli import Result, cli_env
from tests.support.serverproc import ServerProcess

PROBE_RULES = {r.id for r in RULES if r.when != "follow"}
FOLLOW_RULES = {r.id for r in RULES if r.when == "follow"}


def kit(*args: str, timeout: float = 180) -> Result:
    """``forewarn conformance ARGS`` to completion, 80 columns wide."""
    proc = subprocess.run([sys.executable, "-m", "forewarn", "conformance", *args],
                          capture_output=True, text=True, timeout=timeout,
                          env=cli_env(columns=80))  # fmt: skip
    return Result(proc.returncode, proc.stdout, proc.stderr)


@dataclass
class Verdicts:
    """A ``--json`` report: every rule's verdict and detail."""

    data: dict[str, Any]

    @classmethod
    def of(cls, text: str) -> Verdicts:
        return cls(json.loads(text))

    def verdict(self, verdict: str) -> set[str]:
        return {r["id"] for r in self.data["results"] if r["verdict"] == verdict}

    def detail(self, rule_id: str) -> str:
        return next(str(r["detail"]) for r in self.data["results"] if r["id"] == rule_id)


def address(server: ServerProcess, vm: str) -> str:
    """The loopback address ``vm`` of the server's fleet speaks from."""
    for scope in server.control("GET", "/api/v1/topology").json()["scopes"]:
        for entry in scope["vms"]:
            if entry["name"] == vm:
                return str(entry["address"])
    raise AssertionError(f"no VM {vm}")


@pytest.fixture
def mock() -> Iterator[MockEndpoint]:
    endpoint = MockEndpoint().start()
    yield endpoint
    endpoint.stop()


def lines_fit(text: str) -> None:
    too_wide = [line for line in text.splitlines() if len(line) > 80]
    assert too_wide == [], too_wide


def junit_counts(path: Path) -> dict[str, str]:
    import xml.etree.ElementTree as ET

    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None
    return {k: suite.attrib[k] for k in ("tests", "failures", "skipped")}

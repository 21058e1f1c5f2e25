"""The example scenario files play and hold on the demo fleet; the docs' scenario file
(docs/how-to/rollout-drill.md) is the reboot drill, and `forewarn scenario run` plays it
as the page shows."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from forewarn.scenarios import load_scenario_file
from tests.support.cli import run_cli
from tests.support.docpages import block_after, page
from tests.support.serverproc import VIRTUAL, ServerProcess

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "scenarios").glob("*.yaml"))
MARKER = "<!-- example: file drill.yaml -->"


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_plays_and_holds(play: Any, path: Path) -> None:
    played = play(load_scenario_file(path))
    assert played.run.ok, [(c.what, c.detail) for c in played.run.checks if not c.ok]


def test_the_soak_example_brings_weather() -> None:
    scenario = load_scenario_file(ROOT / "examples" / "scenarios" / "soak.yaml")
    assert scenario.weather is not None and scenario.weather.seed == 42


def _readme_block() -> str:
    """The scenario file the rollout drill's page shows, right after its marker."""
    return block_after(page("how-to/rollout-drill.md"), MARKER, "yaml")


def test_the_readme_scenario_is_the_reboot_drill_in_five_lines() -> None:
    block = _readme_block()
    assert block == (ROOT / "examples" / "scenarios" / "reboot-drill.yaml").read_text("utf-8")
    assert len(block.splitlines()) == 5


def test_the_readme_scenario_runs(start_server: Any, tmp_path: Path) -> None:
    server: ServerProcess = start_server(VIRTUAL)
    drill = tmp_path / "drill.yaml"
    drill.write_text(_readme_block(), "utf-8")
    result = run_cli(["scenario", "run", str(drill)], server.control_url)
    assert result.code == 0, result.stdout + result.stderr
    assert "T+5m step 2/3: approve 1 event(s) of reboot" in result.stdout
    assert "drill: every expectation held (3 checks), T+15m of platform time" in result.stdout


def test_a_scenario_s_expectations_as_junit(start_server: Any, tmp_path: Path) -> None:
    server: ServerProcess = start_server(VIRTUAL)
    drill = tmp_path / "drill.yaml"
    drill.write_text(
        _readme_block().replace("started: approved", "started: not_before"), "utf-8"
    )  # one expectation now fails
    out = tmp_path / "drill.xml"
    result = run_cli(["scenario", "run", str(drill), "--junit", str(out)], server.control_url)
    assert result.code == 1, result.stdout + result.stderr
    (suite,) = ET.parse(out).getroot().findall("testsuite")
    assert suite.get("name") == "forewarn scenario drill"
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "1", "0")
    *cases, reacted = suite.findall("testcase")
    assert all(c.get("classname") == "drill.expectations" and c.get("time") for c in cases)
    assert reacted.get("classname") == "drill.fleet-reaction"  # the report's, not judged
    assert reacted.find("skipped") is not None and suite.get("skipped") == "1"
    (failed,) = [c for c in cases if c.find("failure") is not None]
    assert "not_before" in (failed.get("name") or "")

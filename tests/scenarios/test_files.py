"""Scenario files: what they may say, and mistakes as one line naming file, line and key."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from forewarn.cli import main
from forewarn.scenarios import ScenarioError, library_names, library_scenario, load_scenario_file


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "drill.yaml"
    path.write_text(text, "utf-8")
    return path


def test_a_file_compiles_to_steps_in_platform_seconds(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "description: a drill\n"
        "steps:\n"
        "  - at: +1h30m\n"
        "    do: platform-reboot\n"
        "    on: web\n"  # a bare `on` is YAML's true: it is taken as on
        "    as: rollout\n"
        "    notice: 20m\n"
        "  - {after: 90s, do: cancel, on: rollout, count: 1}\n"
        "  - {wait: ended, for: rollout, within: 2d}\n"
        "  - {wait: 10}\n"
        "expect:\n"
        "  - {operation: rollout, state: completed, notice_at_least: 20m}\n",
    )
    scenario = load_scenario_file(path)
    assert scenario.name == "drill"
    first, cancel, wait, pause = scenario.steps
    assert (first.at, first.do, first.target, first.name, first.notice) == (
        5400.0, "platform-reboot", "web", "rollout", 1200.0,
    )  # fmt: skip
    assert (cancel.after, cancel.do, cancel.target, cancel.count) == (90.0, "cancel", "rollout", 1)
    assert (wait.wait, wait.wait_for, wait.within) == ("ended", "rollout", 172800.0)
    assert pause.pause == 10.0
    assert scenario.expectations[0].notice_at_least == 1200.0


CASES = [
    pytest.param(
        "steps:\n  - do: reboot\n    on: web-0\n",
        2,
        "unknown operation 'reboot'; known: ",
        "`$.steps[0].do`",
        id="operation",
    ),
    pytest.param(
        "steps:\n  - do: user-reboot\n    on: web-0\n    colour: red\n",
        4,
        "Object contains unknown field `colour`",
        "`$.steps[0]`",
        id="unknown-key",
    ),
    pytest.param(
        "steps:\n  - {do: user-reboot, on: web-0}\n  - do: approve\n    on: reboot\n",
        4,
        "approve acts on the events of an earlier operation",
        "`$.steps[1].on`",
        id="unnamed-operation",
    ),
    pytest.param(
        "steps:\n  - {do: user-reboot, on: web-0, as: r}\n"
        "  - {do: user-reboot, on: web-1, as: r}\n",
        3,
        "the name 'r' is used twice",
        "`$.steps[1].as`",
        id="duplicate-name",
    ),
    pytest.param(
        "steps:\n  - do: user-reboot\n    on: web-0\n    at: soon\n",
        4,
        "at 'soon' is not a duration like 90, 90s, 5m, 1h30m, 3d or PT5M",
        "`$.steps[0].at`",
        id="duration",
    ),
    pytest.param(
        "steps:\n  - {do: user-reboot, on: web-0, as: r}\n  - wait: rebooted\n    for: r\n",
        3,
        "wait 'rebooted' is neither approved, started, ended nor a duration",
        "`$.steps[1].wait`",
        id="condition",
    ),
    pytest.param(
        "steps:\n  - {do: user-reboot, on: $target}\n",
        1,
        "steps use $target, but target: is not given",
        "`$.target`",
        id="target",
    ),
    pytest.param(
        "steps:\n  - {do: user-reboot, on: web-0, as: r}\nexpect:\n  - operation: r\n"
        "    saw: [Reboot Scheduled]\n",
        5,
        "saw is not a check of an operation",
        "`$.expect[0].saw`",
        id="expectation",
    ),
    pytest.param(
        "steps:\n  - {do: user-reboot, on: web-0, as: r}\nexpect:\n  - vm: web-0\n"
        "    saw: [Reboot Pending]\n",
        5,
        "'Reboot Pending' is not an event state like 'Freeze Scheduled'",
        "`$.expect[0].saw`",
        id="state",
    ),
    pytest.param(
        "weather:\n  duration: 1h\n  rates: {live-migration: often}\n",
        1,
        "rate of live-migration 'often' is not a rate like 2/h",
        "`$.weather`",
        id="weather",
    ),
]


@pytest.mark.parametrize(("text", "line", "problem", "path"), CASES)
def test_a_mistake_names_file_line_and_key(
    tmp_path: Path, text: str, line: int, problem: str, path: str
) -> None:
    file = _write(tmp_path, text)
    with pytest.raises(ScenarioError) as info:
        load_scenario_file(file)
    message = str(info.value)
    assert message.startswith(f"scenario file {file}, line {line}: {problem}"), message
    assert message.endswith(path), message


def test_run_of_a_broken_file_is_one_line_and_exit_code_2(tmp_path: Path) -> None:
    file = _write(tmp_path, "steps:\n  - {do: reboot, on: web-0}\n")
    result = CliRunner().invoke(
        main, ["--control", "http://127.0.0.1:9", "scenario", "run", str(file)]
    )
    assert result.exit_code == 2
    [line] = result.output.splitlines()
    assert line.startswith(f"forewarn: error: scenario file {file}, line 2: unknown operation")


def test_an_unknown_name_lists_the_named_scenarios() -> None:
    result = CliRunner().invoke(main, ["scenario", "show", "fire-drill"])
    assert result.exit_code == 2
    assert "no scenario called 'fire-drill'; named scenarios: all-tenants-on-host" in result.output


@pytest.mark.parametrize("name", library_names())
def test_show_prints_each_named_scenarios_timeline(name: str) -> None:
    result = CliRunner().invoke(main, ["scenario", "show", name], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    scenario = library_scenario(name)
    assert result.output.startswith(f"{name}: {scenario.description}\n")
    assert scenario.steps[0].do in result.output
    assert "expects:" in result.output


def test_show_gives_the_catalogue_timing() -> None:
    result = CliRunner().invoke(main, ["scenario", "show", "degraded-hardware"],
                                env={"COLUMNS": "200"})  # fmt: skip
    assert "Redeploy, notice 3d" in result.output
    hardware = CliRunner().invoke(main, ["scenario", "show", "hardware-failure"],
                                  env={"COLUMNS": "200"})  # fmt: skip
    assert "Redeploy, created Started" in hardware.output


def test_list_names_every_scenario() -> None:
    result = CliRunner().invoke(main, ["scenario", "list", "--json"])
    assert [s["name"] for s in __import__("json").loads(result.output)] == library_names()
    assert len(library_names()) == 11

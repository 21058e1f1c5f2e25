"""Values that typed fine but broke the agent (inf, overflowing durations, a port past
65535, a misspelt event type) are refused by check-config and run, exit 2, key named."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from forewarn.agent import ConfigError
from forewarn.agent.config_layers import load_config
from tests.agent.helpers import write

_K8S = "[handlers.k]\ntype = 'kubernetes'\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("safety_margin = inf", "safety_margin: expected `float` <= 2592000.0"),
        ("safety_margin = nan", "safety_margin: expected `float` >= 0.0"),
        ("[[rules]]\nact_minutes_before = 1e300", "rules[0].act_minutes_before: expected `float`"),
        ("[kubernetes]\nact_minutes_before = 1e300", "kubernetes.act_minutes_before: expected"),
        ("poll_interval = inf", "poll_interval: expected `float` <= 3600"),
        ("poll_interval = 0.001", "poll_interval: expected `float` >= 0.05"),
        ("late_timeout = inf", "late_timeout: expected `float` <= 2592000.0"),
        ("shutdown_timeout = -1", "shutdown_timeout: expected `float` >= 0.0"),
        ("[handlers.x]\ntype = 'exec'\nargv = ['a']\ntimeout = inf", "handlers.x.timeout"),
        (_K8S + "pdb_timeout = inf", "handlers.k.pdb_timeout: expected `float` <= 2592000.0"),
        (_K8S + "grace_period = -5", "handlers.k.grace_period: expected `int` >= -1"),
        ("metrics_bind = '127.0.0.1:99999'", "metrics_bind: port 99999 is not 1-65535"),
        ("metrics_bind = '127.0.0.1:0'", "metrics_bind: port 0 is not 1-65535"),
        (
            "[[rules]]\nevent_types = ['Rebot']",
            "rules[0].event_types[0]: invalid enum value 'Rebot' (known: Freeze, Reboot,",
        ),
        ("[[rules]]\nstatuses = ['Schedueld']", "rules[0].statuses[0]: invalid enum value"),
        ("[[rules]]\nsources = ['Plaform']", "(known: Platform, User)"),
        ("[kubernetes]\nevent_types = ['Rebot']", "kubernetes.event_types[0]: invalid enum"),
        ("local_address = 'not an address'", "local_address: 'not an address' is not an IP"),
        ("api_version = '2021-01-01'", "api_version: unknown api-version '2021-01-01' (known:"),
        ("[coordination]\nttl = inf", "coordination.ttl: expected `float` <= 2592000.0"),
    ],
)
def test_values_that_broke_the_agent_are_refused(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path / "bad.toml", text + "\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"{path}: "), caught.value
    assert message in str(caught.value), caught.value


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("SAFETY_MARGIN", "inf", "expected `float` <= 2592000.0"),
        ("POLL_INTERVAL", "inf", "expected `float` <= 3600"),
        ("METRICS_BIND", "127.0.0.1:99999", "port 99999 is not 1-65535"),
        ("LOCAL_ADDRESS", "not an address", "is not an IP address"),
        ("API_VERSION", "2099-01-01", "unknown api-version '2099-01-01'"),
        ("KUBERNETES_EVENT_TYPES", "Reboot,Rebot", "invalid enum value 'Rebot' (known: Freeze"),
        ("KUBERNETES_ACT_MINUTES_BEFORE", "1e300", "expected `float` <= 43200.0"),
        ("KUBERNETES_GRACE_PERIOD", "-2", "expected `int` >= -1"),
    ],
)
def test_the_environment_gets_the_same_checks_naming_the_variable(
    name: str, value: str, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(None, {f"FOREWARN_AGENT_{name}": value})
    assert str(caught.value).startswith(f"environment FOREWARN_AGENT_{name}={value!r}: ")
    assert message in str(caught.value), caught.value


def test_sane_edges_still_load(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path / "ok.toml",
            "poll_interval = 0.05\nsafety_margin = 0\nlocal_address = '::1'\n"
            "metrics_bind = '[::1]:65535'\napi_version = '2017-03-01'\n"
            "[[rules]]\nevent_types = ['Reboot', 'Freeze']\nsources = ['User']\n"
            "statuses = ['Scheduled', 'Started']\nact_minutes_before = 43200\n",
        )
    )
    assert config.poll_interval == 0.05 and config.local_address == "::1"
    assert config.rules[0].event_types == ["Reboot", "Freeze"]
    assert config.rules[0].act_minutes_before == 43200


def _agent(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "forewarn", "agent", *args],
        capture_output=True, text=True, timeout=60,
        env={k: v for k, v in os.environ.items() if not k.startswith("FOREWARN_AGENT_")},
    )  # fmt: skip


@pytest.mark.parametrize("command", ["check-config", "run"])
def test_check_config_and_run_exit_2_naming_the_key(tmp_path: Path, command: str) -> None:
    path = write(tmp_path / "bad.toml", "state_path = 'x.db'\nsafety_margin = inf\n")
    result = _agent(command, "-c", str(path))
    assert result.returncode == 2, result
    assert " ".join(line.strip() for line in result.stderr.splitlines()) == (
        f"forewarn agent: error: {path}: safety_margin: expected `float` <= 2592000.0"
    )
    assert not (tmp_path / "x.db").exists()

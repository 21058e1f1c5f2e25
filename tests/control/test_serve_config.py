"""ServeConfig: the checks ``forewarn serve`` applies before opening anything."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from forewarn.cli import main
from forewarn.server import ConfigError, ServeConfig, parse_bind
from tests.support.liveserver import raw_request
from tests.support.serveconfig import effective as settings
from tests.support.serveconfig import serve_runner
from tests.support.serverproc import ServerProcess


@pytest.mark.parametrize(
    "bind", ["0.0.0.0:8170", "192.0.2.10:8170", "[::]:8170", ":8170", "example.com:8170"]
)
def test_control_api_off_loopback_needs_a_token(bind: str) -> None:
    with pytest.raises(ConfigError, match="off loopback: set --control-token"):
        ServeConfig(control_bind=bind)
    assert ServeConfig(control_bind=bind, control_token="t").control_bind == bind


@pytest.mark.parametrize(
    "bind", ["127.0.0.1:8170", "127.9.8.7:1", "localhost:0", "[::1]:8170", "::1:8170"]
)
def test_control_api_on_loopback_needs_no_token(bind: str) -> None:
    assert ServeConfig(control_bind=bind).control_token is None


@pytest.mark.parametrize("token", ["", None])
def test_an_empty_token_does_not_count(token: str | None) -> None:
    with pytest.raises(ConfigError, match="--control-token"):
        ServeConfig(control_bind="0.0.0.0:8170", control_token=token)


BAD_BINDS = [
    "nohost",
    "127.0.0.1",
    "127.0.0.1:",
    "127.0.0.1:http",
    "127.0.0.1:-1",
    "127.0.0.1:65536",
    "127.0.0.1:99999",
    "127.0.0.1: 80",
    "127.0.0.1:²",
]


@pytest.mark.parametrize("bind", BAD_BINDS)
@pytest.mark.parametrize("field", ["control_bind", "imds_bind"])
def test_bad_bind_strings_are_refused(field: str, bind: str) -> None:
    value: Any = (bind,) if field == "imds_bind" else bind
    with pytest.raises(ConfigError, match=r"bind address|out of range"):
        ServeConfig(**{field: value})


def test_every_imds_bind_is_checked() -> None:
    with pytest.raises(ConfigError, match="'oops'"):
        ServeConfig(imds_bind=("127.0.0.1:8169", "oops"))


@pytest.mark.parametrize(
    ("text", "parts"),
    [("127.0.0.1:8169", ("127.0.0.1", 8169)), ("[::1]:80", ("::1", 80)), (":0", ("", 0))],
)
def test_parse_bind_splits_host_and_port(text: str, parts: tuple[str, int]) -> None:
    assert parse_bind(text) == parts


@pytest.mark.parametrize("scale", [0, -1, -0.5, math.nan])
def test_time_scale_must_be_positive(scale: float) -> None:
    with pytest.raises(ConfigError, match="--time-scale must be a positive number"):
        ServeConfig(time_scale=scale)


@pytest.mark.parametrize(
    ("field", "message"),
    [("rate_limit", "--rate-limit must be >= 0"), ("first_call_delay", "--first-call-delay")],
)
def test_negative_rates_and_delays_are_refused(field: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ServeConfig(**{field: -1})


def test_as_dict_hides_the_token_and_lists_binds() -> None:
    config = ServeConfig(imds_bind=("127.0.0.1:1", "127.0.0.1:2"), control_token="s3cret")
    out = config.as_dict()
    assert out["control_token"] == "***"
    assert out["imds_bind"] == ["127.0.0.1:1", "127.0.0.1:2"]
    assert "extra" not in out


# ------------------------------------------------------------------ --control-host


@pytest.mark.parametrize(
    "name", ["forewarn.test", "Proxy.Example:8443", "192.0.2.7", "[2001:db8::1]:80", "::1", "a_b"]
)
def test_control_hosts_take_names_and_addresses(name: str) -> None:
    assert ServeConfig(control_hosts=(name,)).control_hosts == (name,)


@pytest.mark.parametrize(
    "name", ["", "http://x.example", "x.example/path", "*.example", "a b", "x:99999", "x:port"]
)
def test_a_control_host_that_is_not_a_name_is_refused(name: str) -> None:
    with pytest.raises(ConfigError, match=r"--control-host .* must be a host name or IP address"):
        ServeConfig(control_hosts=("ok.example", name))


def test_control_hosts_come_from_flags_env_and_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = serve_runner(tmp_path, monkeypatch)

    def effective(*args: str, env: dict[str, str] | None = None) -> Any:
        return settings(runner, *args, env=env)["control_hosts"]

    assert effective() == []
    assert effective("--control-host", "a.example", "--control-host", "b:1") == ["a.example", "b:1"]
    env = {"FOREWARN_SERVE_CONTROL_HOSTS": "c.example d.example"}
    assert effective(env=env) == ["c.example", "d.example"]
    (tmp_path / "serve.yaml").write_text("control_hosts: [e.example]\n")
    assert effective("--config", "serve.yaml") == ["e.example"]
    assert effective("--config", "serve.yaml", env=env) == ["c.example", "d.example"]
    result = runner.invoke(main, ["serve", "--control-host", "http://x", "--print-config"])
    assert result.exit_code == 2
    assert "--control-host 'http://x' must be a host name" in result.output


def test_a_served_control_api_answers_to_configured_names_only(tmp_path: Path) -> None:
    """``forewarn serve --control-host`` as a real process: the name reaches the API."""
    server = ServerProcess(tmp_path / "f.db", ["--control-host", "forewarn.test"]).start()
    try:
        for host, status in [
            ("forewarn.test", 200),
            (f"localhost:{server.control_port}", 200),
            (f"evil.example:{server.control_port}", 421),
        ]:
            response = raw_request(server.control_port, "GET", "/api/v1/clock", [("Host", host)])
            assert response.status_code == status, host
    finally:
        server.stop()

"""Configuration: every mistake is refused with the key named; layers override in order."""

from __future__ import annotations

from pathlib import Path

import pytest

from forewarn.agent import ConfigError
from forewarn.agent.config_layers import env_settings, load_config
from forewarn.agent.config_schema import Approval, ExecSpec, KubernetesSpec, WebhookSpec
from tests.agent.helpers import write

GOOD = """
    vm_name = "web-0"
    poll_interval = 0.5
    state_path = "/tmp/agent.db"

    [coordination]
    backend = "postgres"
    url = "postgresql://postgres@127.0.0.1/test"

    [handlers.drain]
    type = "exec"
    argv = ["/usr/local/bin/drain", "--fast"]
    timeout = 120

    [handlers.notify]
    type = "webhook"
    url = "https://hooks.example.com/x"
    on_receipt = true
    body = { text = "${EventType} of ${vm_name} at ${NotBefore}", vms = "${Resources}" }

    [handlers.k8s]
    type = "kubernetes"
    node = "aks-node-1"

    [[rules]]
    name = "preempt"
    event_types = ["Preempt"]
    handlers = ["notify", "drain"]
    parallel = true
    approval = "after-handlers"

    [[rules]]
    name = "group"
    min_vms = 2
    handlers = ["k8s"]
    approval = "coordinated"
"""


def test_a_good_file_loads_with_types_and_defaults(tmp_path: Path) -> None:
    config = load_config(write(tmp_path / "a.toml", GOOD))
    assert config.vm_name == "web-0"
    assert config.poll_interval == 0.5
    assert config.safety_margin == 10.0  # default
    assert isinstance(config.handlers["drain"], ExecSpec)
    assert config.handlers["drain"].argv == ["/usr/local/bin/drain", "--fast"]
    assert isinstance(config.handlers["notify"], WebhookSpec)
    assert config.handlers["notify"].on_receipt is True
    assert isinstance(config.handlers["k8s"], KubernetesSpec)
    assert config.handlers["k8s"].ignore_daemonsets is True
    assert [r.name for r in config.rules] == ["preempt", "group"]
    assert config.rules[1].approval == Approval.COORDINATED
    assert config.rules[0].statuses == ["Scheduled"]
    assert config.coordination is not None and config.coordination.backend == "postgres"


def test_no_file_gives_the_defaults() -> None:
    config = load_config(None)
    assert config.rules == [] and config.handlers == {}
    assert config.metrics_bind == "127.0.0.1:9465"
    assert config.ignore_freeze_under == 10.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("poll_interval = 'fast'", "poll_interval: expected `float`, got `str`"),
        ("poll_interval = 0", "poll_interval: expected `float` >= 0.05"),
        ("pol_interval = 1", "pol_interval: unknown key"),
        ("[[rules]]\nmin_vms = -1", "rules[0].min_vms: expected `int` >= 0"),
        ("[[rules]]\nhandlers = ['nope']", "rules[0].handlers: unknown handler 'nope'"),
        ("[[rules]]\napproval = 'sometimes'", "rules[0].approval: invalid enum value 'sometimes'"),
        ("[[rules]]\nignore = true\napproval = 'solo'", "rules[0]: an ignore rule takes no"),
        ("[[rules]]\napproval = 'coordinated'", "rules[0].approval: coordinated needs"),
        ("[[rules]]\nmin_vms = 3\nmax_vms = 2", "rules[0].min_vms: 3 is more than max_vms"),
        ("[[rules]]\nname='a'\n[[rules]]\nname='a'", "rules[1].name: 'a' is also rules[0]"),
        ("[[rules]]\nstatuses = []", "rules[0].statuses: must list at least one"),
        ("[[rules]]\nbogus = 1", "rules[0].bogus: unknown key"),
        (
            "[handlers.x]\ntype = 'shell'\nargv = ['a']",
            "handlers.x.type: invalid value 'shell' (known: exec, webhook",
        ),
        ("[handlers.x]\ntype = 'exec'", "handlers.x: object missing required field `argv`"),
        ("[handlers.x]\ntype = 'exec'\nargv = []", "handlers.x.argv: expected `array` of length"),
        ("[handlers.x]\ntype = 'exec'\nargv = ['a']\ntimeout = -1", "handlers.x.timeout"),
        ("[handlers.x]\ntype = 'python'\ntarget = 'nocolon'", "handlers.x.target: 'nocolon'"),
        ("[handlers.x]\ntype = 'webhook'\nurl = 'ftp://x'", "handlers.x.url: 'ftp://x' is not"),
        (
            "[handlers.x]\ntype = 'webhook'\nurl = 'http://h'\nbody = {a = '${Nope}'}",
            "handlers.x.body: unknown placeholder Nope",
        ),
        (
            "[handlers.x]\ntype = 'webhook'\nurl = 'http://h'\nbody = {a = 'costs $ 5'}",
            "handlers.x.body: bad template",
        ),
        (
            "[handlers.x]\ntype = 'kubernetes'\ntaint_effect = 'Sometimes'",
            "handlers.x.taint_effect: must be one of",
        ),
        (
            "[handlers.x]\ntype = 'kubernetes'\nevents_namespace = 'Kube_System'",
            "handlers.x.events_namespace: 'Kube_System' is not a namespace",
        ),
        ("metrics_bind = 'localhost'", "metrics_bind: 'localhost' is not HOST:PORT"),
        ("log_format = 'xml'", "log_format: must be json or console"),
        ("[coordination]\nbackend = 'etcd'", "coordination.backend: must be redis or postgres"),
        ("[coordination]\nbackend = 'postgres'", "coordination.url: a postgres URL starts with"),
        ("[coordination]\ntable = 'x; drop'", "coordination.table: 'x; drop' is not"),
        ("shutdown = 'later'", "shutdown: invalid enum value 'later'"),
    ],
)
def test_mistakes_name_the_file_and_the_key(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path / "bad.toml", text + "\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"{path}: "), caught.value
    assert message in str(caught.value), caught.value


def test_unreadable_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing.toml: cannot read \(No such file"):
        load_config(tmp_path / "missing.toml")
    with pytest.raises(ConfigError, match=r"bad.toml: not valid TOML: .*line 1"):
        load_config(write(tmp_path / "bad.toml", "poll_interval = = 1\n"))
    (tmp_path / "latin.toml").write_bytes(b"vm_name = '\xe9'\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(tmp_path / "latin.toml")


def test_layers_defaults_file_env_flags(tmp_path: Path) -> None:
    path = write(tmp_path / "a.toml", GOOD)
    env = {
        "FOREWARN_AGENT_POLL_INTERVAL": "2.5",
        "FOREWARN_AGENT_VM_NAME": "from-env",
        "FOREWARN_AGENT_DRY_RUN": "true",
        "FOREWARN_AGENT_COORDINATION_URL": "postgresql://other/db",
        "FOREWARN_AGENT_CONFIG": "ignored: the CLI reads it",
        "UNRELATED": "x",
    }
    config = load_config(path, env, {"vm_name": "from-flag", "state_path": None})
    assert config.poll_interval == 2.5  # env over file
    assert config.vm_name == "from-flag"  # flag over env
    assert config.dry_run is True
    assert config.state_path == "/tmp/agent.db"  # a flag left out changes nothing
    assert config.coordination is not None
    assert config.coordination.url == "postgresql://other/db"
    assert config.coordination.backend == "postgres"  # the rest of the table stays


def test_env_mistakes_are_named() -> None:
    with pytest.raises(ConfigError, match="FOREWARN_AGENT_POLL_INTERVAL='soon'"):
        env_settings({"FOREWARN_AGENT_POLL_INTERVAL": "soon"})
    with pytest.raises(ConfigError, match="FOREWARN_AGENT_POLL_INTERVL: unknown setting"):
        env_settings({"FOREWARN_AGENT_POLL_INTERVL": "1"})
    with pytest.raises(ConfigError, match=r"POLL_INTERVAL='0': expected `float` >= 0\.05"):
        load_config(None, {"FOREWARN_AGENT_POLL_INTERVAL": "0"})

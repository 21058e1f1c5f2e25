"""The configuration's records convert as msgspec converts them, without loading msgspec.

``forewarn.agent.structs.convert`` builds what it vouches for itself and hands anything
else to msgspec (the same types as msgspec structs): each value here, valid or not, of
every field of every table, must come out the same both ways (the same records, or the
same error message), and a valid configuration must not load msgspec at all.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from forewarn.agent import structs
from forewarn.agent.config_schema import (
    AgentConfig,
    Approval,
    Coordination,
    ExecSpec,
    HandlerSpec,
    KubernetesSpec,
    KubernetesTable,
    PythonSpec,
    RuleSpec,
    WebhookSpec,
    json_schema,
)

REPO = Path(__file__).resolve().parents[2]

#: Values of every kind a TOML file or the environment gives, and some that break bounds.
VALUES: list[Any] = [
    0, 1, -1, -2, 7, 3600, 10**6 + 1, 2**53, 2**53 + 1, 2**63, 10**20, 10**400, 0.0, 0.04,
    0.05, 1.5, -0.5, 1e300, float("inf"), float("-inf"), float("nan"), True, False, None,
    "", "x", "1", "0", "true", "False", "TRUE", "yes", "null", "1.5", "-2", "1e3", "1.0",
    "007", "+1", " 1", "inf", "nan", "60", "Reboot", "reboot", "Scheduled", "Platform",
    "solo", "never", "coordinated", "retry", "exec", "kubernetes", [], ["a"], [1],
    ["Reboot", "Freeze"], ["Rebot"], [None], {}, {"a": 1}, {"a": "b"}, {"a": ["x"]},
]  # fmt: skip
#: A table of each kind with what it needs, for the mutations of one field at a time.
HANDLERS = {
    ExecSpec: {"type": "exec", "argv": ["drain"]},
    WebhookSpec: {"type": "webhook", "url": "http://hooks"},
    PythonSpec: {"type": "python", "target": "module:function"},
    KubernetesSpec: {"type": "kubernetes"},
}


def same(value: Any, tp: Any, strict: bool = True) -> tuple[str, Any]:
    """What both conversions give, checked equal: ("ok", builtins) or ("error", message)."""
    try:
        ours: tuple[str, Any] = (
            "ok",
            structs.to_builtins(structs.convert(value, tp, strict=strict)),
        )
    except structs.ValidationError as exc:
        ours = ("error", str(exc))
    try:
        mirror = structs.msgspec_type(tp)
        theirs: tuple[str, Any] = (
            "ok",
            msgspec.to_builtins(msgspec.convert(value, mirror, strict=strict)),
        )
    except msgspec.ValidationError as exc:
        theirs = ("error", str(exc))
    assert json.dumps(ours, default=repr) == json.dumps(theirs, default=repr), (value, tp)
    return ours


def mutations() -> Iterator[tuple[Any, Any]]:
    """(value, type): each field of each table set to each of ``VALUES``."""
    for field in structs.fields(AgentConfig):
        for value in VALUES:
            yield {field.name: value}, AgentConfig
    for table, key in ((RuleSpec, "rules"), (Coordination, "coordination"),
                       (KubernetesTable, "kubernetes")):  # fmt: skip
        for field in structs.fields(table):
            for value in VALUES:
                inner = {field.name: value}
                yield {key: [inner] if key == "rules" else inner}, AgentConfig
    for spec, base in HANDLERS.items():
        for field in structs.fields(spec):
            for value in VALUES:
                yield {**base, field.name: value}, HandlerSpec
    for value in VALUES:
        for key in ("handlers", "rules", "kubernetes", "coordination"):
            yield {key: value}, AgentConfig
        yield {"handlers": {"h": value}}, AgentConfig
        yield value, HandlerSpec


def test_every_field_converts_as_msgspec_converts_it() -> None:
    outcomes = [same(value, tp)[0] for value, tp in mutations()]
    assert outcomes.count("ok") > 300 and outcomes.count("error") > 1000  # both were tried


def field_type(table: type[structs.Struct], name: str) -> Any:
    return next(f.type for f in structs.fields(table) if f.name == name)


@pytest.mark.parametrize(
    "tp",
    [bool, float, int, str, Approval, list[str], field_type(KubernetesTable, "event_types"),
     field_type(AgentConfig, "poll_interval"), field_type(KubernetesTable, "act_minutes_before"),
     field_type(KubernetesSpec, "grace_period"), field_type(Coordination, "ttl")],
)  # fmt: skip
def test_the_environments_strings_convert_as_msgspec_converts_them(tp: Any) -> None:
    """``FOREWARN_AGENT_*`` values are converted leniently (msgspec's strict=False)."""
    for value in VALUES:
        if isinstance(value, str):
            same(value, tp, strict=False)


def test_a_whole_configuration_converts_alike_and_keeps_its_shape() -> None:
    data = {
        "vm_name": "web-0", "poll_interval": 2, "dry_run": True, "shutdown": "abandon",
        "coordination": {"backend": "postgres", "url": "postgresql://db/x", "ttl": 60},
        "kubernetes": {"node": "n-0", "event_types": ["Reboot"], "act_minutes_before": 5},
        "handlers": {k.__struct_config__.tag: v for k, v in HANDLERS.items()},
        "rules": [{"name": "r", "event_types": ["Reboot"], "handlers": ["exec"],
                   "approval": "solo", "min_vms": 2, "act_minutes_before": 1.5}],
    }  # fmt: skip
    kind, built = same(data, AgentConfig)
    assert kind == "ok" and list(built["handlers"]["exec"]) == [
        "type",
        "timeout",
        "on_receipt",
        "argv",
        "env",
        "cwd",
    ]
    config = structs.convert(data, AgentConfig)
    assert isinstance(config.handlers["webhook"], WebhookSpec)
    assert config.rules[0].approval is Approval.SOLO and config.poll_interval == 2.0
    assert config == structs.convert(data, AgentConfig)
    assert structs.replace(config, vm_name="web-1").vm_name == "web-1"
    assert config.handlers["exec"].__struct_config__.tag == "exec"
    assert repr(ExecSpec(argv=["a"])) == (
        "ExecSpec(timeout=60.0, on_receipt=False, argv=['a'], env={}, cwd=None)"
    )


def test_a_default_list_or_dict_is_each_records_own() -> None:
    first, second = ExecSpec(argv=["a"]), ExecSpec(argv=["b"])
    first.env["K"] = "v"
    assert second.env == {} and RuleSpec().statuses == ["Scheduled"]
    assert RuleSpec().statuses is not RuleSpec().statuses


def test_a_valid_configuration_loads_no_msgspec(tmp_path: Path) -> None:
    """The example, a file with every kind of handler, the environment and flags."""
    every = tmp_path / "every.toml"
    every.write_text(
        'vm_name = "web-0"\npoll_interval = 1\nlocal_address = "10.0.0.4"\n'
        '[coordination]\nbackend = "redis"\n'
        '[handlers.a]\ntype = "exec"\nargv = ["true"]\nenv = {K = "v"}\n'
        '[handlers.b]\ntype = "webhook"\nurl = "http://h/x"\nbody = {vm = "${vm_name}"}\n'
        '[handlers.c]\ntype = "kubernetes"\nnode = "n-0"\n'
        '[[rules]]\nevent_types = ["Reboot"]\nhandlers = ["a", "b", "c"]\n'
        'approval = "coordinated"\nact_minutes_before = 5\n'
    )
    code = (
        "import json, sys\n"
        "from forewarn.agent.config_layers import load_config\n"
        "env = {'FOREWARN_AGENT_POLL_INTERVAL': '2.5', 'FOREWARN_AGENT_DRY_RUN': 'true',\n"
        "       'FOREWARN_AGENT_KUBERNETES_EVENT_TYPES': 'reboot,Freeze',\n"
        "       'FOREWARN_AGENT_KUBERNETES_GRACE_PERIOD': '30'}\n"
        "for path in sys.argv[1:]:\n"
        "    load_config(path, env, {'vm_name': 'web-1', 'metrics_bind': ''})\n"
        "print(json.dumps([m for m in ('msgspec', 'typing_extensions', 'pathlib', 'urllib.parse',"
        " 'ipaddress') if m in sys.modules]))\n"
    )
    paths = [str(REPO / "examples" / "agent" / "agent.toml"), str(every)]
    out = subprocess.run([sys.executable, "-c", code, *paths], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []


def test_the_json_schema_is_msgspecs_of_the_same_types() -> None:
    """The reference page's schema: descriptions, bounds, defaults, tags, no unknown keys."""
    defs = json_schema()["$defs"]
    config = defs["AgentConfig"]
    assert config["description"] == AgentConfig.__doc__ and config["additionalProperties"] is False
    assert config["properties"]["poll_interval"] == {
        "type": "number", "minimum": 0.05, "maximum": 3600, "default": 1.0
    }  # fmt: skip
    handlers = config["properties"]["handlers"]["additionalProperties"]["discriminator"]
    assert handlers == {"propertyName": "type", "mapping": {
        tag: f"#/$defs/{spec.__name__}" for spec, tag in
        ((s, s.__struct_config__.tag) for s in HANDLERS)
    }}  # fmt: skip
    assert defs["ExecSpec"]["required"] == ["type", "argv"]


def test_a_local_address_is_read_as_ipaddress_reads_it() -> None:
    """Plain IPv4 addresses are taken without the ipaddress module; the rest it judges."""
    import ipaddress
    import random

    from forewarn.agent.config_schema import check_value

    rng = random.Random(31)
    octets = ["0", "00", "1", "9", "10", "99", "100", "199", "200", "249", "250", "255", "256",
              "300", "007", "-1", "", " 1", "1\n"]  # fmt: skip
    values = [".".join(rng.choice(octets) for _ in range(rng.choice([3, 4, 4, 5])))
              for _ in range(5000)]  # fmt: skip
    values += ["::1", "fe80::1%eth0", "10.0.0.4", "1.2.3.4\n", "x", "٣.1.1.1"]
    for value in values:
        try:
            ipaddress.ip_address(value)
            valid = True
        except ValueError:
            valid = False
        assert (check_value("local_address", value) is None) is valid, repr(value)

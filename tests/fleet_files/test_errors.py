"""A mistake in a fleet file is one line naming the file, the line and the key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from forewarn.fleet import FleetError, build_topology, fleet_from_builtins, load_fleet_file

CASES = [
    pytest.param(
        "location: westeurope\nhosts: 0\nscopes:\n  - {kind: standalone, name: a}\n",
        2,
        "hosts must be at least 1 - at `$.hosts`",
        id="range",
    ),
    pytest.param(
        "scopes:\n  - kind: standalone\n    name: a\n  - kind: mainframe\n    name: b\n",
        4,
        "Invalid enum value 'mainframe' - at `$.scopes[1].kind`",
        id="schema-type",
    ),
    pytest.param(
        "scopes:\n  - kind: availability_set\n    name: s\n    vms: 2\n    colour: blue\n",
        5,
        "Object contains unknown field `colour` - at `$.scopes[0]`",
        id="unknown-key",
    ),
    pytest.param(
        "scopes:\n  - kind: standalone\n    name: a\n  - kind: standalone\n",
        4,
        "Object missing required field `name` - at `$.scopes[1]`",
        id="missing-key",
    ),
    pytest.param(
        "scopes:\n"
        "  - kind: availability_set\n"
        "    name: s\n"
        "    update_domains: 2\n"
        "    vms:\n"
        "      - name: a\n"
        "      - name: b\n"
        "        update_domain: 2\n",
        8,
        "update domain 2 is outside 0..1 - at `$.scopes[0].vms[1].update_domain`",
        id="explicit-vm",
    ),
    pytest.param(
        "scopes:\n  - {kind: standalone, name: a}\n\n\n  - {kind: standalone, name: A}\n",
        5,
        "VM name 'A' is used twice (names are case-insensitive)",
        id="duplicate-name",
    ),
    pytest.param(
        "scopes:\n"
        "  - kind: availability_set\n"
        "    name: s\n"
        "    vms:\n"
        "      - {name: a, address: 127.3.0.1}\n"
        "      - {name: b, address: 127.3.0.1}\n",
        6,
        "VMs 'a' and 'b' share address 127.3.0.1",
        id="duplicate-address",
    ),
    pytest.param(
        "scopes:\n"
        "  - kind: availability_set\n"
        "    name: app\n"
        "    vms:\n"
        "      - {name: a, host: rack-7, update_domain: 0}\n"
        "      - {name: b, host: rack-8, update_domain: 0}\n"
        "      - {name: c, host: rack-7, update_domain: 1}\n",
        7,
        "host 'rack-7' carries 'a' (update domain 0) and 'c' (update domain 1) of scope 'app'; "
        "a host holds one update domain of a scope",
        id="host-rule",
    ),
]


@pytest.mark.parametrize(("text", "line", "problem"), CASES)
def test_the_error_names_file_line_and_key(
    tmp_path: Path, text: str, line: int, problem: str
) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FleetError) as info:
        build_topology(load_fleet_file(path))
    assert str(info.value) == f"fleet file {path}, line {line}: {problem}"


def test_fleet_check_prints_the_error_as_one_line_and_fails(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text("scopes:\n  - kind: scale_set\n    name: s\n    vms: two\n", "utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "forewarn", "fleet", "check", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr == (
        f"forewarn: error: fleet file {path}, line 4: Expected `int | array | null`, got `str` "
        "- at `$.scopes[0].vms`\n"
    )


def test_a_yaml_syntax_error_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text("scopes:\n  - kind: standalone\n    name: [a\n", "utf-8")
    with pytest.raises(FleetError, match=r"is not valid YAML: .*\(line 4, column 1\)"):
        load_fleet_file(path)


def test_a_fleet_from_the_database_has_no_line_to_name() -> None:
    spec = fleet_from_builtins(
        {"scopes": [{"kind": "standalone", "name": "a"}], "hosts": 0}, origin="fleet stored in x.db"
    )
    with pytest.raises(FleetError) as info:
        build_topology(spec)
    assert str(info.value) == "fleet stored in x.db: hosts must be at least 1 - at `$.hosts`"


def test_a_file_changed_since_loading_still_reports_the_error(tmp_path: Path) -> None:
    """The line is looked up again on error; a file gone meanwhile only loses the line."""
    path = tmp_path / "fleet.yaml"
    path.write_text("hosts: 0\nscopes:\n  - {kind: standalone, name: a}\n", "utf-8")
    spec = load_fleet_file(path)
    path.unlink()
    with pytest.raises(FleetError) as info:
        build_topology(spec)
    assert str(info.value) == f"fleet file {path}: hosts must be at least 1 - at `$.hosts`"

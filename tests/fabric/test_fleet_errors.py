"""Every fleet error names the file (or database) it came from and, where it can, the entry."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from forewarn.cli import main
from forewarn.fleet import FleetError, build_topology, fleet_from_builtins, load_fleet_file


def _load(path: Path) -> None:
    build_topology(load_fleet_file(path))


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        pytest.param(
            "hosts: 0\nscopes:\n  - {kind: standalone, name: a}\n",
            "hosts must be at least 1 - at `$.hosts`",
            id="hosts",
        ),
        pytest.param(
            "scopes: []\n", "a fleet needs at least one scope - at `$.scopes`", id="no-scopes"
        ),
        pytest.param(
            "scopes:\n  - {kind: standalone, name: a}\n"
            "  - {kind: availability_set, name: b, vms: [{name: b0, address: 10.0.0.300}]}\n",
            "VM 'b0' has an invalid address '10.0.0.300' - at `$.scopes[1].vms[0].address`",
            id="address",
        ),
        pytest.param(
            "scopes:\n  - kind: availability_set\n    name: s\n    update_domains: 2\n"
            "    vms: [{name: a}, {name: b, update_domain: 2}]\n",
            "update domain 2 is outside 0..1 - at `$.scopes[0].vms[1].update_domain`",
            id="update-domain",
        ),
        pytest.param(
            "scopes:\n  - {kind: availability_set, name: s, vms: [{name: a, port: 0}]}\n",
            "port 0 is outside 1..65535 - at `$.scopes[0].vms[0].port`",
            id="port",
        ),
        pytest.param(
            "scopes:\n  - {kind: availability_set, name: s, vms: [{name: 'a b'}]}\n",
            "VM name 'a b' must be 1-80 letters, digits, '.', '-', '_' (starting with a letter "
            "or digit) - at `$.scopes[0].vms[0].name`",
            id="vm-name",
        ),
        pytest.param(
            "scopes:\n  - {kind: standalone, name: a}\n"
            "  - {kind: availability_set, name: s, vms: 2, terminate_notification: {}}\n",
            "terminate_notification is a scale-set setting ('s') - at "
            "`$.scopes[1].terminate_notification`",
            id="terminate",
        ),
        pytest.param(
            "scopes:\n  - {kind: scale_set, name: s, vms: 2,"
            " terminate_notification: {timeout_minutes: 99}}\n",
            "terminate notification timeout must be 5 to 15 minutes, got 99 - at "
            "`$.scopes[0].terminate_notification`",
            id="terminate-timeout",
        ),
        pytest.param(
            "scopes:\n  - {kind: scale_set, name: s, vms: 2, placement_groups: 3}\n",
            "scope 's' asks for 3 placement groups for 2 VMs; each group holds at least one VM"
            " - at `$.scopes[0].placement_groups`",
            id="placement-group",
        ),
        pytest.param(
            "default_vm: ghost\nscopes:\n  - {kind: standalone, name: a}\n",
            "default VM 'ghost' is not in the fleet - at `$.default_vm`",
            id="default-vm",
        ),
        pytest.param(
            "address_prefix: '127.1.2'\nscopes:\n  - {kind: standalone, name: a}\n",
            "address_prefix '127.1.2' must be two octets like '127.1' - at `$.address_prefix`",
            id="prefix",
        ),
        pytest.param(
            "scopes:\n  - {kind: standalone, name: a}\n  - {kind: standalone, name: A}\n",
            "VM name 'A' is used twice (names are case-insensitive)",
            id="duplicate-name",
        ),
        pytest.param(
            "scopes:\n  - {kind: standalone, name: a}\n  - {kind: mainframe, name: b}\n",
            "Invalid enum value 'mainframe' - at `$.scopes[1].kind`",
            id="schema",
        ),
    ],
)
def test_a_fleet_file_error_names_the_file_and_the_entry(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FleetError) as info:
        _load(path)
    # The line each names is checked in tests/fleet_files/test_errors.py.
    without_line = re.sub(r", line \d+: ", ": ", str(info.value), count=1)
    assert without_line == f"fleet file {path}: {problem}"


def test_a_file_that_is_not_utf8_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_bytes(b"scopes:\n  - {kind: standalone, name: \xff}\n")
    with pytest.raises(FleetError) as info:
        _load(path)
    assert str(info.value) == f"fleet file {path} is not UTF-8 text (byte 37)"


def test_a_directory_is_not_a_fleet_file(tmp_path: Path) -> None:
    with pytest.raises(FleetError) as info:
        _load(tmp_path)
    assert str(info.value) == f"cannot read fleet file {tmp_path}: Is a directory"


def test_a_stored_fleet_error_names_the_database() -> None:
    spec = fleet_from_builtins(
        {"scopes": [{"kind": "standalone", "name": "a"}], "hosts": 0},
        origin="fleet stored in /srv/forewarn.db",
    )
    with pytest.raises(FleetError) as info:
        build_topology(spec)
    assert str(info.value) == (
        "fleet stored in /srv/forewarn.db: hosts must be at least 1 - at `$.hosts`"
    )


def test_serve_prints_the_fleet_error_with_its_file_on_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("mine.yaml").write_text(
        "scopes:\n  - {kind: availability_set, name: s, vms: [{name: a, address: nope}]}\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(main, ["serve", "--db", "x.db", "--fleet", "mine.yaml"])
    assert result.exit_code == 1
    [line] = result.output.strip().splitlines()
    assert line.startswith("forewarn: ")
    assert line.endswith(
        "fleet file mine.yaml, line 2: VM 'a' has an invalid address 'nope' - at "
        "`$.scopes[0].vms[0].address`"
    )
    assert not Path("x.db").exists()

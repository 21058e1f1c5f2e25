"""``forewarn fleet init`` writes commented examples that load, and ``fleet check`` says
what each one holds."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from forewarn.cli import main
from forewarn.fleet import ScopeKind, Topology, build_topology, demo_fleet, load_fleet_file
from forewarn.fleet.loader import EXAMPLE_FLEETS, fleet_to_builtins


def _init(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    result = CliRunner().invoke(main, ["fleet", "init", "--example", name, str(path)])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"wrote {path}: the {name} example")
    return path


@pytest.mark.parametrize("name", list(EXAMPLE_FLEETS))
def test_every_example_is_written_commented_and_checks(tmp_path: Path, name: str) -> None:
    path = _init(tmp_path, name)
    text = path.read_text("utf-8")
    assert sum(line.lstrip().startswith("#") for line in text.splitlines()) >= 3
    result = CliRunner().invoke(main, ["fleet", "check", "--json", str(path)])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["vms"] == len(build_topology(load_fleet_file(path)).vms)


def _topology(tmp_path: Path, name: str) -> Topology:
    return build_topology(load_fleet_file(_init(tmp_path, name)))


def test_the_demo_example_is_the_built_in_demo_fleet(tmp_path: Path) -> None:
    spec = load_fleet_file(_init(tmp_path, "demo"))
    assert fleet_to_builtins(spec) == fleet_to_builtins(demo_fleet())


def test_the_aks_example_splits_its_user_pool_into_placement_groups(tmp_path: Path) -> None:
    topology = _topology(tmp_path, "aks")
    groups = [s for s in topology.scopes.values() if s.id.startswith("user/")]
    assert [s.id for s in groups] == ["user/pg0", "user/pg1", "user/pg2"]
    assert all(s.kind is ScopeKind.SCALE_SET and len(s.vm_names) == 8 for s in groups)
    assert all({topology.vms[n].update_domain for n in s.vm_names} == set(range(5)) for s in groups)
    assert {s.id for s in topology.scopes.values()} == {"system", "spot", *(s.id for s in groups)}
    assert all(vm.spot for vm in topology.vms.values() if vm.scope_id == "spot")


def test_the_three_tier_example_has_an_availability_set_per_tier(tmp_path: Path) -> None:
    topology = _topology(tmp_path, "three-tier")
    kinds = {s.id: s.kind for s in topology.scopes.values()}
    assert kinds == {
        "web": ScopeKind.AVAILABILITY_SET,
        "app": ScopeKind.AVAILABILITY_SET,
        "db": ScopeKind.AVAILABILITY_SET,
        "bastion": ScopeKind.STANDALONE,
    }
    primary, replica = topology.vms["sql-primary"], topology.vms["sql-replica"]
    assert (primary.update_domain, replica.update_domain) == (0, 1)
    assert primary.host != replica.host
    assert topology.scopes["web"].policy.auto_approve_user_reboot


def test_the_thousand_example_holds_a_thousand_vms(tmp_path: Path) -> None:
    topology = _topology(tmp_path, "thousand")
    assert len(topology.vms) == 1000
    assert len({vm.address for vm in topology.vms.values()}) == 1000
    kinds = Counter(s.kind for s in topology.scopes.values())
    assert kinds == {
        ScopeKind.SCALE_SET: 6,  # batch/pg0..pg4 and spot
        ScopeKind.AVAILABILITY_SET: 2,
        ScopeKind.STANDALONE: 2,
    }


def test_init_never_overwrites_without_force(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text("mine\n", "utf-8")
    refused = CliRunner().invoke(main, ["fleet", "init", str(path)])
    assert refused.exit_code == 1
    assert path.read_text("utf-8") == "mine\n"
    forced = CliRunner().invoke(main, ["fleet", "init", "--force", str(path)])
    assert forced.exit_code == 0, forced.output
    assert "kind: availability_set" in path.read_text("utf-8")


def test_init_to_stdout_and_an_unknown_example(tmp_path: Path) -> None:
    shown = CliRunner().invoke(main, ["fleet", "init", "--example", "aks", "-"])
    assert shown.exit_code == 0
    assert "placement_groups: 3" in shown.output
    unknown = CliRunner().invoke(main, ["fleet", "init", "--example", "mainframe", "-"])
    assert unknown.exit_code == 2
    assert "'mainframe' is not one of" in unknown.output


def test_fleet_check_shows_no_update_domains_for_a_standalone_vm(tmp_path: Path) -> None:
    path = _init(tmp_path, "demo")
    result = CliRunner().invoke(main, ["fleet", "check", "--wide", str(path)])
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line.split() for line in result.output.splitlines() if line}
    assert rows["jumpbox"][1:4] == ["standalone", "1", "-"]
    assert rows["web"][1:4] == ["availability_set", "6", "3"]

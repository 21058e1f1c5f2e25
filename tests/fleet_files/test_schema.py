"""The fleet JSON Schema: generated from the parser's types, shipped current, and it agrees
with the parser on what a fleet file may say."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import jsonschema_rs
import pytest
import yaml
from click.testing import CliRunner

from forewarn.cli import main
from forewarn.fleet import FleetError, build_topology, fleet_from_builtins
from forewarn.fleet.loader import EXAMPLE_FLEETS, example_fleet_text, fleet_schema

REGENERATE = "forewarn fleet schema -o src/forewarn/fleet/fleet.schema.json"


def _shipped() -> dict[str, Any]:
    text = resources.files("forewarn.fleet").joinpath("fleet.schema.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def test_the_shipped_schema_is_the_one_the_code_generates() -> None:
    assert _shipped() == fleet_schema(), f"the shipped schema is stale: run `{REGENERATE}`"


def test_fleet_schema_prints_the_shipped_schema() -> None:
    result = CliRunner().invoke(main, ["fleet", "schema"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == _shipped()


def test_the_schema_documents_every_field() -> None:
    """Editors show these descriptions: none may be missing."""
    for name, definition in _shipped()["$defs"].items():
        assert definition.get("description"), name
        for field, spec in definition["properties"].items():
            assert spec.get("description"), f"{name}.{field}"


@pytest.mark.parametrize("name", list(EXAMPLE_FLEETS))
def test_every_example_is_valid_by_the_schema(name: str) -> None:
    validator = jsonschema_rs.validator_for(_shipped())
    assert validator.is_valid(yaml.safe_load(example_fleet_text(name)))


@pytest.mark.parametrize(
    "fleet",
    [
        pytest.param({"scopes": [{"kind": "mainframe", "name": "a"}]}, id="unknown-kind"),
        pytest.param({"scopes": [{"kind": "standalone", "name": "a", "colour": 1}]}, id="key"),
        pytest.param({"scopes": [{"kind": "standalone"}]}, id="no-name"),
        pytest.param({"scopes": []}, id="no-scopes"),
        pytest.param({"hosts": 0, "scopes": [{"kind": "standalone", "name": "a"}]}, id="hosts"),
        pytest.param(
            {"scopes": [{"kind": "scale_set", "name": "s", "vms": 2, "placement_groups": 0}]},
            id="placement-groups",
        ),
        pytest.param(
            {
                "scopes": [
                    {"kind": "availability_set", "name": "s", "vms": [{"name": "a", "port": 0}]}
                ]
            },
            id="port",
        ),
    ],
)
def test_what_the_schema_refuses_the_parser_refuses(fleet: dict[str, Any]) -> None:
    validator = jsonschema_rs.validator_for(_shipped())
    assert not validator.is_valid(fleet)
    with pytest.raises(FleetError):
        build_topology(fleet_from_builtins(fleet))

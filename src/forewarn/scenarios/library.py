"""The named scenarios shipped with forewarn (``library/*.yaml``), and finding a scenario
by name or file."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import yaml

from forewarn.scenarios.model import Scenario, ScenarioError, load_scenario_file, parse_scenario

__all__ = ["find_scenario", "library_names", "library_scenario", "library_text"]


def library_names() -> list[str]:
    """Every named scenario, sorted."""
    folder = resources.files(__package__).joinpath("library")
    return sorted(
        p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml")
    )


def library_text(name: str) -> str:
    """The YAML of named scenario ``name``."""
    if name not in library_names():
        raise ScenarioError(
            f"no scenario called {name!r}; named scenarios: {', '.join(library_names())}"
        )
    return resources.files(__package__).joinpath(f"library/{name}.yaml").read_text("utf-8")


def library_scenario(name: str) -> Scenario:
    """Named scenario ``name``, compiled."""
    return parse_scenario(yaml.safe_load(library_text(name)), name, f"scenario {name}")


def find_scenario(name_or_file: str) -> Scenario:
    """A scenario file when the argument names one (or looks like a path), else a named
    scenario."""
    path = Path(name_or_file)
    if path.exists() or path.suffix in (".yaml", ".yml", ".json") or "/" in name_or_file:
        return load_scenario_file(path)
    return library_scenario(name_or_file)

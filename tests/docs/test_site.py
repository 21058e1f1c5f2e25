"""The documentation site builds with ``mkdocs build --strict``, and its Reference pages
hold what the code has: every command of the lazily loaded CLI, every key of the fleet
file, every control route, every metric.

One build for the module (a few seconds), outside the tree.
"""

from __future__ import annotations

import html
import inspect
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from forewarn.cli import COMMANDS
from forewarn.control.openapi import openapi_document
from forewarn.fleet.spec import fleet_schema

pytest.importorskip("mkdocs", reason="the docs extra: pip install -e '.[docs]'")
pytest.importorskip("material", reason="the docs extra: pip install -e '.[docs]'")

REPO = Path(__file__).resolve().parents[2]


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "--site-dir",
         str(site)], capture_output=True, text=True, timeout=300, cwd=config.parent,
    )  # fmt: skip


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("site")
    built = build(REPO / "mkdocs.yml", site)
    assert built.returncode == 0, built.stderr
    return site


def text(page: Path) -> str:
    """A page's words, tags and entities aside."""
    words = re.sub(r"<[^>]+>", " ", page.read_text())
    return re.sub(r"&[a-z]+;|&#\d+;", " ", words)


def command_paths(group: click.Group, prefix: str) -> Iterator[str]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        yield f"{prefix} {name}"
        if isinstance(command, click.Group):
            yield from command_paths(command, f"{prefix} {name}")


def test_the_cli_page_has_every_command_and_subcommand(site: Path) -> None:
    from forewarn.cli import main

    page = (site / "reference" / "cli" / "index.html").read_text()
    headings = set(re.findall(r'<h\d id="(forewarn[^"]*)"', page))
    expected = {path.replace(" ", "-") for path in command_paths(main, "forewarn")}
    assert {f"forewarn-{name}" for name in COMMANDS} <= expected
    assert expected - headings == set()
    assert "--time-scale" in page and "--control" in page  # options, not just names


def test_the_vm_commands_page_has_every_vm_command_and_option(site: Path) -> None:
    import argparse

    from forewarn.vm.parser import build

    page = (site / "reference" / "vm-commands" / "index.html").read_text()
    headings = set(re.findall(r'<h2 id="(forewarn[^"]*)"', page))

    def paths(parser: argparse.ArgumentParser, prefix: str) -> list[argparse.ArgumentParser]:
        found = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    assert f"{prefix}-{name}" in headings, f"{prefix}-{name}"
                    found += [child, *paths(child, f"{prefix}-{name}")]
        return found

    for parser in paths(build(), "forewarn"):
        for action in parser._actions:
            if action.help != argparse.SUPPRESS and action.option_strings[:1] != ["-h"]:
                for flag in action.option_strings:
                    assert f"<code>{flag}</code>" in page, flag


def test_the_cli_page_shows_real_defaults(site: Path) -> None:
    """Each option's default as ``--help`` prints it (click 8.3 keeps an unset default as
    ``Sentinel.UNSET``, which a table of ``option.default`` would print as one)."""
    page = html.unescape((site / "reference" / "cli" / "index.html").read_text())
    assert "Sentinel" not in page and "UNSET" not in page
    words = " ".join(re.sub(r"<[^>]+>", "", page).split())
    assert "[default: 127.0.0.1:8169]" in words and "[default: forewarn.db]" in words


def test_the_fleet_page_has_every_key_of_every_struct(site: Path) -> None:
    page = text(site / "reference" / "fleet-file" / "index.html")
    schema = fleet_schema()
    for name, definition in schema["$defs"].items():
        assert name in page
        for key in definition.get("properties", {}):
            assert f"{key}" in page, (name, key)
    served = (site / "reference" / "fleet.schema.json").read_text()
    assert '"FleetSpec"' in served


def test_the_control_api_page_lists_every_route(site: Path) -> None:
    page = text(site / "reference" / "control-api" / "index.html")
    document = openapi_document("0", report=True, eventgrid=True)
    for path, operations in document["paths"].items():
        for method in operations:
            assert re.search(rf"{method.upper()}\s+{re.escape(path)}\s", page), (method, path)


def served_series() -> set[str]:
    """Every family the server's and the agent's registries export, by its public name."""
    from prometheus_client import CollectorRegistry

    from forewarn.agent.metrics import SPECS
    from forewarn.imds.metrics import EndpointMetrics
    from forewarn.rehearsal.verdict_memo import VerdictMetrics
    from forewarn.server.cluster.metrics import ClusterMetrics

    server = CollectorRegistry()
    EndpointMetrics(server)
    VerdictMetrics(server)
    ClusterMetrics(server)
    suffix = {"counter": "_total", "histogram": "_bucket"}
    agent = {name + suffix.get(kind, "") for kind, name, *_ in SPECS.values()}
    return agent | {family.name + suffix.get(family.type, "") for family in server.collect()}


def test_the_metrics_and_arm_pages_name_what_is_served(site: Path) -> None:
    metrics = text(site / "reference" / "metrics" / "index.html")
    for name in ("forewarn_imds_responses_total", "forewarn_cluster_leader",
                 "forewarn_agent_events_seen_total", "forewarn_agent_ready"):  # fmt: skip
        assert name in metrics
    served = served_series()
    assert len(served) > 20 and "forewarn_agent_handler_duration_seconds_bucket" in served
    assert {name for name in served if not re.search(rf"\b{name}\b", metrics)} == set()
    arm = text(site / "reference" / "arm-routes" / "index.html")
    assert re.search(r"POST\s+/subscriptions/\{name\}/resourcegroups/\{name\}/providers/"
                     r"microsoft\.compute/virtualmachines/\{name\}/restart", arm)  # fmt: skip


def rendered_words(page: Path) -> str:
    """A page's words as they read (tags dropped, entities decoded, spaces collapsed)."""
    words = html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))
    return " ".join(words.split())


def test_the_python_client_page_documents_every_exported_name(site: Path) -> None:
    import forewarn.client
    import forewarn.testing

    page = (site / "reference" / "python-client" / "index.html").read_text()
    headings = set(re.findall(r'<h\d id="(forewarn\.(?:client|testing)\.\w+)"', page))
    exported = {f"forewarn.client.{name}" for name in forewarn.client.__all__}
    exported |= {f"forewarn.testing.{name}" for name in forewarn.testing.__all__}
    assert len(exported) > 35 and "forewarn.client.ScheduledEventsClient" in exported
    assert exported - headings == set()
    # The docstrings themselves, not only the names: each client method's first paragraph.
    words = rendered_words(site / "reference" / "python-client" / "index.html")
    for client in (forewarn.client.ScheduledEventsClient,
                   forewarn.client.AsyncScheduledEventsClient):  # fmt: skip
        for name in ("get", "poll", "approve", "instance", "watch"):
            doc = inspect.getdoc(getattr(client, name))
            assert doc, (client, name)
            sentence = " ".join(doc.split("\n\n")[0].replace("``", "").split())
            assert sentence in words, (client.__name__, name, sentence)


def test_the_metrics_page_shows_each_series_labels(site: Path) -> None:
    from forewarn.agent.metrics import SPECS
    from forewarn.imds.metrics import LABELS as ENDPOINT_LABELS
    from forewarn.server.cluster.metrics import LABELS as CLUSTER_LABELS

    page = (site / "reference" / "metrics" / "index.html").read_text()
    rows = {re.search(r"<code>(\w+?)(?:_total|_bucket)?</code>", row).group(1): row  # type: ignore[union-attr]
            for row in re.findall(r"<tr>(.*?)</tr>", page, re.DOTALL) if "<td>" in row}  # fmt: skip
    declared = {**ENDPOINT_LABELS, **CLUSTER_LABELS}
    declared |= {name: labels for _, name, _, labels, _ in SPECS.values() if labels}
    assert {"forewarn_imds_responses", "forewarn_agent_handler_runs"} <= set(declared)
    for name, labels in declared.items():
        cells = re.findall(r"<td>(.*?)</td>", rows[name], re.DOTALL)
        assert cells[2] == ", ".join(f"<code>{label}</code>" for label in labels), name


def test_the_home_page_leads_to_the_three_paths_in_one_click(site: Path) -> None:
    home = (site / "index.html").read_text()
    for path in ("rehearse-a-fleet", "test-in-ci", "drive-it-like-azure"):
        assert f'href="paths/{path}/"' in home
        assert (site / "paths" / path / "index.html").exists()


#: The Concepts and How-to sections (issue 29): page -> a phrase only that page's own text has.
GUIDES = {
    "concepts/fleets-and-scopes": "Which VM is asking",
    "concepts/events": "Operations, event types and notice",
    "concepts/enablement": "Enablement: when a scope gets notice",
    "concepts/time": "Virtual time",
    "concepts/approvals": "Through ARM, by a central controller",
    "concepts/faithful-to-azure": "The wire contract per api-version",
    "reference/api-versions": "What each api-version returns",
    "how-to/rollout-drill": "Read the verdict",
    "how-to/endpoint-faults": "Inject faults",
    "how-to/dashboard": "Watch a fleet on the dashboard",
    "how-to/record-and-replay": "Replay it",
    "how-to/vm-client": "The Python client",
    "how-to/run-programs-as-vms": "The articles' commands, as written",
    "how-to/agent-on-a-vm": "Install it under systemd",
    "how-to/agent-on-kubernetes": "What the handler does",
    "how-to/coordinated-approval": "Rehearse it",
    "how-to/pytest-plugin": "Test your code with the pytest plugin",
    "how-to/scale-out-postgresql": "Many front-ends, one fleet",
    "how-to/event-grid": "How a controller is graded",
    "how-to/resource-graph": "What it answers",
    "conformance": "Check forewarn against your Azure region",
    "operations/serving": "The metadata listener under load",
}


def test_the_api_version_table_is_in_the_reference_and_linked_from_home(site: Path) -> None:
    """What each api-version returns is Reference (in its nav section, one click from
    Home), not only an aside of a concept page."""
    page = text(site / "reference" / "api-versions" / "index.html")
    for version in ("2017-03-01", "2017-08-01", "2017-11-01", "2019-01-01", "2019-04-01",
                    "2019-08-01", "2020-07-01"):  # fmt: skip
        assert re.search(rf"{version}\s+(Freeze|\+|all five)", page), version
    assert "Too many requests" in page
    home = (site / "index.html").read_text()
    body = home[home.find("<article") :]
    assert 'href="reference/api-versions/"' in body  # in the page's text, not only the nav
    nav = (REPO / "mkdocs.yml").read_text()
    reference = nav[nav.index("  - Reference:") : nav.index("  - Operations:")]
    assert "reference/api-versions.md" in reference


def test_every_concept_and_how_to_page_is_built_and_in_the_nav(site: Path) -> None:
    home = (site / "index.html").read_text()
    for page, phrase in GUIDES.items():
        built = site / page / "index.html"
        assert built.exists(), page
        assert phrase in text(built), (page, phrase)
        assert f'href="{page}/"' in home, page  # the sidebar reaches it from the first page
    pages = [*(REPO / "docs" / "concepts").glob("*.md"), *(REPO / "docs" / "how-to").glob("*.md")]
    on_disk = {str(p.relative_to(REPO / "docs").with_suffix("")) for p in pages}
    assert on_disk <= set(GUIDES)


def test_the_concepts_come_between_get_started_and_the_how_to_guides(site: Path) -> None:
    home = text(site / "index.html")
    order = [home.find(title) for title in ("Get started", "Concepts", "How-to guides")]
    assert -1 not in order and order == sorted(order), order


def test_the_readme_links_into_the_site_with_paths_that_exist() -> None:
    """The README's links are relative paths of docs/ files, so they work on GitHub too."""
    readme = (REPO / "README.md").read_text()
    links = re.findall(r"\]\((docs/[^)#]+\.md)(?:#[^)]*)?\)", readme)
    for path in ("docs/paths/rehearse-a-fleet.md", "docs/paths/test-in-ci.md",
                 "docs/paths/drive-it-like-azure.md", "docs/get-started.md"):  # fmt: skip
        assert path in links
    assert [link for link in links if not (REPO / link).is_file()] == []
    assert len(readme.splitlines()) <= 250  # a few screens


def test_the_operations_pages_include_their_sources(site: Path) -> None:
    reliability = text(site / "operations" / "reliability" / "index.html")
    first = (REPO / "RELIABILITY.md").read_text().splitlines()[0].lstrip("# ").strip()
    assert first in reliability


def test_a_page_left_out_of_the_nav_fails_the_strict_build(tmp_path: Path) -> None:
    """The check that keeps every page reachable: a stray page is an error."""
    copy = tmp_path / "repo"
    shutil.copytree(REPO / "docs", copy / "docs")
    for name in ("mkdocs.yml", "RELIABILITY.md"):
        shutil.copy2(REPO / name, copy / name)
    (copy / "bench").mkdir()
    for name in ("RESULTS.md", "freshness.py"):
        shutil.copy2(REPO / "bench" / name, copy / "bench" / name)
    (copy / "docs" / "stray.md").write_text("# Nobody links here\n")
    built = build(copy / "mkdocs.yml", tmp_path / "site")
    assert built.returncode != 0
    assert "stray.md" in built.stderr


def test_the_docs_extra_alone_holds_what_the_build_needs_and_pins_its_builder() -> None:
    """``pip install '.[docs]'`` alone builds the site (the README's page runs that build in a
    venv of its own): the extra brings the emulator the Reference is written from, and the
    builder the site is made with, below the majors that would break it (mkdocs.yml)."""
    import tomllib

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    docs = extras["docs"]
    assert "forewarn[server]" in docs  # docs/hooks/reference.py imports the control app
    assert "mkdocs>=1.6,<2" in docs and "mkdocs-material>=9.5,<10" in docs
    assert "Zensical" in (REPO / "mkdocs.yml").read_text()  # the choice, and why


def test_the_docs_name_only_options_serve_has() -> None:
    """A reader who copies a ``serve`` line from the site gets the server it describes."""
    from tests.cli.test_docs_name_real_options import real_options, serve_options

    named: set[str] = set()
    for page in (REPO / "docs").rglob("*.md"):
        named |= serve_options(page.read_text())
    assert "--time-scale" in named and "--arm-bind" in named  # the check reads the pages
    assert named - real_options() == set()

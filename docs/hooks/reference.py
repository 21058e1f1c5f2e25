"""MkDocs hook: the Reference pages, written from the code at every build so they cannot
drift from it.

The fleet file and the agent configuration come from the JSON Schemas of the structs that
parse them, the control API from the OpenAPI document the server serves, the ARM routes
from the table a real ARM app routes on (``ArmApp.route_table``), the metrics from the
registries that export them, the VM's commands from their argparse parsers
(``forewarn.vm.parser``). (The emulator's commands are mkdocs-click's, in
``docs/reference/cli.md``.)
The Benchmarks page is bench/RESULTS.md with, first, whether each figure is older than the
code it measures, as git says at build time (``bench/freshness.py``).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

#: Generated page (under docs/) -> what writes its Markdown.
PAGES: dict[str, Callable[[], str]] = {}


def page(path: str) -> Callable[[Callable[[], str]], Callable[[], str]]:
    def register(write: Callable[[], str]) -> Callable[[], str]:
        PAGES[path] = write
        return write

    return register


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add each generated page, and the documents they render, to the site."""
    for path, write in PAGES.items():
        files.append(File.generated(config, path, content=write()))
    for path, document in DOCUMENTS.items():
        files.append(File.generated(config, path, content=json.dumps(document(), indent=2)))
    return files


# ---------------------------------------------------------------------- rendering helpers


def cell(text: object) -> str:
    """``text`` fit for one Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(header: Iterable[str], rows: Iterable[Iterable[object]]) -> str:
    head = list(header)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def type_of(schema: dict[str, Any]) -> str:
    """A JSON Schema's type in a few words, with links to the definitions it names."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        return f"[{name}](#{name.lower()})"
    if "anyOf" in schema:
        return " or ".join(type_of(s) for s in schema["anyOf"])
    if "enum" in schema:
        return "one of " + ", ".join(f"`{v}`" for v in schema["enum"])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {type_of(schema.get('items', {}))}"
    if kind == "object" and "additionalProperties" in schema:
        extra = schema["additionalProperties"]
        return f"map of {type_of(extra) if isinstance(extra, dict) else 'any'}"
    return "`null`" if kind == "null" else str(kind)


_LIMITS = ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "minLength",
           "maxLength", "minItems", "maxItems", "pattern")  # fmt: skip
_LIMIT_NAMES = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=",
                "exclusiveMaximum": "<"}  # fmt: skip


def limits(schema: dict[str, Any]) -> str:
    shown = []
    for key in _LIMITS:
        if key in schema:
            shown.append(f"{_LIMIT_NAMES.get(key, key)} `{schema[key]}`")
    return ", ".join(shown)


def schema_page(title: str, intro: str, schema: dict[str, Any], download: str) -> str:
    """Each definition of a msgspec JSON Schema as a table of its keys."""
    defs: dict[str, Any] = schema.get("$defs", {})
    root = schema["$ref"].rsplit("/", 1)[1] if "$ref" in schema else None
    order = ([root] if root else []) + sorted(name for name in defs if name != root)
    parts = [f"# {title}", intro, f"The whole schema as JSON: [{download}]({download})."]
    for name in order:
        definition = defs[name]
        parts.append(f"## {name}")
        if "description" in definition:
            parts.append(definition["description"])
        if "enum" in definition:
            parts.append("One of: " + ", ".join(f"`{v}`" for v in definition["enum"]) + ".")
            continue
        properties: dict[str, Any] = definition.get("properties", {})
        required = set(definition.get("required", []))
        rows = []
        for key, prop in properties.items():
            default = "required" if key in required else json.dumps(prop.get("default"))
            notes = " ".join(filter(None, [prop.get("description", ""), limits(prop)]))
            rows.append([f"`{key}`", type_of(prop), default, notes])
        if rows:
            parts.append(table(["key", "type", "default", "meaning"], rows))
    return "\n\n".join(parts) + "\n"


# ------------------------------------------------------------------------ the documents


def fleet_schema() -> dict[str, Any]:
    from forewarn.fleet.spec import fleet_schema

    return fleet_schema()


def agent_schema() -> dict[str, Any]:
    from forewarn.agent.config_schema import json_schema

    return json_schema()


def openapi() -> dict[str, Any]:
    from forewarn.control.openapi import openapi_document

    return openapi_document(version("forewarn"), report=True, eventgrid=True)


#: Documents served beside the pages that render them.
DOCUMENTS: dict[str, Callable[[], dict[str, Any]]] = {
    "reference/fleet.schema.json": fleet_schema,
    "reference/agent.schema.json": agent_schema,
    "reference/openapi.json": openapi,
}


# ---------------------------------------------------------------------------- the pages


def _vm_command(lines: list[str], words: str, parser: Any) -> None:
    """``parser``'s section: what it does, its usage, a row per option; then each of its
    subcommands'."""
    import argparse

    subcommands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if words != "forewarn":
        lines += [f"## {words}", "", parser.description or "", "", "```text",
                  parser.format_usage().removeprefix("usage: ").strip(), "```", ""]  # fmt: skip
        rows = []
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            if action.help == argparse.SUPPRESS:
                continue
            name = ", ".join(f"`{flag}`" for flag in action.option_strings) or (
                f"`{action.metavar or action.dest}`"
            )
            value = "" if action.nargs == 0 else f"`{action.metavar or action.dest.upper()}`"
            rows.append([name, value, action.help or ""])
        if rows:
            lines += [table(["option", "value", "what it does"], rows), ""]
    for sub in subcommands:
        for name, child in sub.choices.items():
            _vm_command(lines, f"{words} {name}", child)


@page("reference/vm-commands.md")
def vm_commands_page() -> str:
    from forewarn.vm.parser import build

    lines = [
        "# VM commands",
        "",
        "The commands a VM runs, generated from their argparse parsers (`forewarn COMMAND "
        "--help` prints the same). They need only the plain install or `forewarn-vm.pyz` "
        "([Install](../install.md)); `forewarn agent ...` also reads `FOREWARN_AGENT_*` "
        "([Agent configuration](agent-config.md)). The emulator's commands are on "
        "[Command line](cli.md).",
        "",
    ]
    _vm_command(lines, "forewarn", build())
    return "\n".join(lines) + "\n"


@page("reference/fleet-file.md")
def fleet_file_page() -> str:
    intro = (
        "A fleet file (YAML) describes the VMs `forewarn serve --fleet FILE` simulates. "
        "`forewarn fleet schema` prints this schema, `forewarn fleet check FILE` checks a "
        "file against it, and `forewarn fleet init` writes a commented example. This page "
        "is generated from the structs that parse fleet files."
    )
    return schema_page("Fleet file", intro, fleet_schema(), "fleet.schema.json")


@page("reference/agent-config.md")
def agent_config_page() -> str:
    intro = (
        "The agent (`forewarn agent run -c agent.toml`) reads one TOML file; "
        "`forewarn agent check-config -c FILE` checks it. Environment variables and flags "
        "override the file. This page is generated from the structs that parse it; "
        "`examples/agent/agent.toml` is a commented example."
    )
    return schema_page("Agent configuration", intro, agent_schema(), "agent.schema.json")


@page("reference/control-api.md")
def control_api_page() -> str:
    document = openapi()
    rows = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            rows.append([f"`{method.upper()}`", f"`{path}`", operation.get("summary", "")])
    schemas = sorted(document.get("components", {}).get("schemas", {}))
    return "\n\n".join([
        "# Control API",
        "The control API (`forewarn serve`, `127.0.0.1:8170` by default) serves its own "
        "OpenAPI 3.1 document at `/openapi.json`; this page is that document, generated "
        "with every optional part on (the rehearsal report, Event Grid). A server started "
        "with `--token` requires `Authorization: Bearer TOKEN` on every route but "
        "`/healthz` and the dashboard's files.",
        "The whole document: [openapi.json](openapi.json).",
        "## Routes",
        table(["method", "path", "what"], rows),
        "## Schemas",
        ", ".join(f"`{name}`" for name in schemas) + ".",
    ]) + "\n"  # fmt: skip


@page("reference/arm-routes.md")
def arm_routes_page() -> str:
    from forewarn.arm import ArmApp, ArmFleet
    from forewarn.fabric import Clock, Fabric, FabricConfig
    from forewarn.fleet import build_topology, demo_fleet
    from forewarn.store import SQLiteStore

    fabric = Fabric(build_topology(demo_fleet()), SQLiteStore(":memory:"), Clock.virtual(),
                    FabricConfig())  # fmt: skip
    try:
        routes = ArmApp(fabric, ArmFleet(fabric.topology)).route_table()
    finally:
        fabric.close()
    rows = []
    for method, shape, accepted in routes:
        versions = f"{accepted[0]} … {accepted[1]}" if accepted else ""
        rows.append([f"`{method}`", "`/" + shape.replace("{}", "{name}") + "`", versions])
    return "\n\n".join([
        "# ARM routes",
        "What the ARM listener (`forewarn serve --arm-bind HOST:PORT`) answers, from the "
        "table it routes on. Literal segments match case-insensitively, as ARM's do; "
        "`{name}` is any name. Where an api-version range is shown, a request outside it "
        "gets ARM's error naming the versions it accepts.",
        table(["method", "path", "api-versions"], rows),
    ]) + "\n"  # fmt: skip


def _metric_rows(
    families: Iterable[tuple[str, str, str]], labels: Mapping[str, Sequence[str]]
) -> list[list[str]]:
    """A row per metric family (name, type, help); ``labels``: the label names of each
    family that has them, as the code that creates it declares them."""
    exposed = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"],
               "gauge": [""], "summary": ["", "_sum", "_count"]}  # fmt: skip
    rows = []
    for name, kind, documentation in families:
        names = ", ".join(f"`{name}{suffix}`" for suffix in exposed[kind])
        rows.append([names, kind, ", ".join(f"`{x}`" for x in labels.get(name, ())),
                     documentation])  # fmt: skip
    return rows


@page("reference/metrics.md")
def metrics_page() -> str:
    from prometheus_client import CollectorRegistry

    from forewarn.agent.metrics import SPECS
    from forewarn.imds import metrics as endpoint
    from forewarn.rehearsal.verdict_memo import VerdictMetrics
    from forewarn.server.cluster import metrics as cluster

    server = CollectorRegistry()
    endpoint.EndpointMetrics(server)
    VerdictMetrics(server)
    cluster.ClusterMetrics(server)
    server_labels = {**endpoint.LABELS, **cluster.LABELS}
    agent_labels = {name: labels for _, name, _, labels, _ in SPECS.values()}
    served = [(f.name, f.type, f.documentation) for f in server.collect()]
    agent = [(name, kind, text) for kind, name, text, _, _ in SPECS.values()]
    header = ["series", "type", "labels", "meaning"]
    return "\n\n".join([
        "# Metrics",
        "Prometheus text at `/metrics`, generated from the registries that export them.",
        "## The server",
        "`forewarn serve`'s control API. The `forewarn_cluster_*` and "
        "`forewarn_replication_*` series appear only when scaled out on PostgreSQL.",
        table(header, _metric_rows(served, server_labels)),
        "## The agent",
        "`forewarn agent run` with `metrics_bind` set (default `127.0.0.1:9465`).",
        table(header, _metric_rows(agent, agent_labels)),
    ]) + "\n"  # fmt: skip


REPO = Path(__file__).resolve().parents[2]


def _freshness_module() -> Any:
    """bench/freshness.py, loaded by path (bench/ is not an installed package)."""
    name = "forewarn_bench_freshness"
    spec = importlib.util.spec_from_file_location(name, REPO / "bench" / "freshness.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@page("operations/benchmarks.md")
def benchmarks_page() -> str:
    freshness = _freshness_module()
    results = (REPO / "bench" / "RESULTS.md").read_text(encoding="utf-8")
    body = results.split("\n", 1)[1]  # RESULTS.md's own title gives way to the page's
    rows = [freshness.freshness(m, REPO) for m in freshness.read_measured(results)]
    return "\n\n".join([
        "# Benchmarks",
        "## Is each figure current?",
        "Whether the code each benchmark measures changed after the commit its figure was "
        "measured at, as git said when this site was built (`python bench/freshness.py` "
        "says it for a checkout).",
        freshness.table(rows, markdown=True),
        body.strip(),
    ]) + "\n"  # fmt: skip

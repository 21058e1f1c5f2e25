"""A fresh venv with only the VM install (docs/install.md's "From a wheel", run as written)
runs the agent and the VM commands against a real ``forewarn serve``, and names the extra
for the rest.

Slow (a wheel built from a copy of this checkout, a venv, a pip install; pip's cache keeps
it to seconds): run with FOREWARN_SLOW_TESTS=1, as ``.ci/run`` does.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import docpages
from tests.support.serverproc import VIRTUAL, ServerProcess, trigger
from tests.test_checkout_stays_clean import not_ignored
from tests.vmside.conftest import (
    AGENT_CONFIG,
    AGENT_EXAMPLE,
    EMULATOR_LIBRARIES,
    REPO,
    WEB0,
    Command,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.environ.get("FOREWARN_SLOW_TESTS"), reason="slow: set FOREWARN_SLOW_TESTS=1"
    ),
]


#: Distributions the VM install must not pull (the server extra and the drivers).
EMULATOR_DISTRIBUTIONS = {"starlette", "uvicorn", "uvloop", "httptools", "jinja2", "pyyaml",
                          "psycopg", "psycopg-binary", "psycopg-pool", "redis", "watchfiles",
                          "websockets"}  # fmt: skip


def _sh(*argv: str | Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def doc_examples() -> list[str]:
    """The docs' block this module runs: "From a wheel"'s first shell block."""
    return docpages.blocks(docpages.section("install.md", "## From a wheel"), "sh")[:1]


def readme_install() -> tuple[list[str], str]:
    """docs/install.md's "From a wheel" (the README's "Install on a VM" before): its
    commands, and the install with an extra."""
    section = docpages.section("install.md", "## From a wheel")
    [block] = doc_examples()
    commands = [line for line in block.splitlines() if line.strip() and not line.startswith("#")]
    [extra] = re.findall(r"`(/opt/forewarn/bin/pip install [^`]*\[redis\][^`]*)`", section)
    return commands, extra


def _bash(line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``line`` as a user types it, ``python3`` being this interpreter's (it has pip)."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    proc = subprocess.run(["bash", "-euc", line], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PATH": path})  # fmt: skip
    assert proc.returncode == 0, f"{line}\n{proc.stdout}{proc.stderr}"
    return proc


def unwrapped(stderr: str) -> str:
    """An error as one line again, however wide the terminal it was wrapped for."""
    return " ".join(line.strip() for line in stderr.splitlines())


def _files(tree: Path) -> set[str]:
    return {str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def vm_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bin/`` of a new venv installed by the documented commands, run as written in a
    copy of this checkout (the build leaves nothing in the checkout), ``/opt/forewarn``
    being a temporary directory."""
    root = tmp_path_factory.mktemp("vm-install")
    tree = root / "forewarn"
    shutil.copytree(REPO / "src", tree / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))  # fmt: skip
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, tree / name)
    before = _files(tree)
    commands, _ = readme_install()
    for line in commands:
        _bash(line.replace("/opt/forewarn", str(root / "venv")), tree)
    built = sorted(_files(tree) - before)
    assert any(path.startswith("dist/forewarn-") for path in built), built
    assert not_ignored(built) == []  # a checkout that followed the docs stays clean
    bin_dir = root / "venv" / "bin"
    _sh(bin_dir / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
        "pytest")  # fmt: skip
    return bin_dir


def test_the_readme_s_install_with_an_extra_works_as_written(vm_bin: Path) -> None:
    _, extra = readme_install()
    tree = vm_bin.parents[1] / "forewarn"
    line = extra.replace("/opt/forewarn", str(vm_bin.parent)) + " --dry-run"
    assert re.search(r"Would install .*\bredis-\d", _bash(line, tree).stdout)


def _has(vm_bin: Path, module: str) -> bool:
    probe = [vm_bin / "python", "-c", f"import {module}"]
    return subprocess.run(probe, capture_output=True).returncode == 0


def _vm(vm_bin: Path, tmp_path: Path, *args: str) -> Command:
    return Command(args, tmp_path, python=str(vm_bin / "python"))


def test_the_vm_install_pulls_nothing_of_the_emulator(vm_bin: Path) -> None:
    listed = _sh(vm_bin / "python", "-m", "pip", "list", "--format", "json",
                 "--disable-pip-version-check").stdout  # fmt: skip
    names = {d["name"].lower().replace("_", "-") for d in json.loads(listed)}
    assert "forewarn" in names
    libraries = {"click", "rich", "httpx", "msgspec", "tenacity", "structlog", "prometheus-client"}
    assert names & libraries == set()  # the VM install is one distribution
    assert names & EMULATOR_DISTRIBUTIONS == set()
    for library in EMULATOR_LIBRARIES:
        probe = subprocess.run([vm_bin / "python", "-c", f"import {library}"],
                               capture_output=True, text=True)  # fmt: skip
        assert probe.returncode != 0, f"{library} is importable in the VM install"
    version = _sh(vm_bin / "forewarn", "--version").stdout
    # read from the wheel's METADATA beside the package, not through importlib.metadata
    asked = "import importlib.metadata as m; print(m.version('forewarn'))"
    installed = _sh(vm_bin / "python", "-c", asked).stdout
    assert version == f"forewarn, version {installed.strip()}\n"


def test_the_agent_runs_against_a_real_server(
    vm_bin: Path, tmp_path: Path, start_server: Callable[..., ServerProcess]
) -> None:
    server = start_server(VIRTUAL)
    event_id = trigger(server, "user-reboot", "web-0")
    config = tmp_path / "agent.toml"
    config.write_text(AGENT_CONFIG)
    check = _vm(vm_bin, tmp_path, "agent", "check-config", "-c", str(config)).wait()
    assert check.code == 0 and f"{config}: valid" in check.stdout, check.stderr
    agent = _vm(vm_bin, tmp_path, "agent", "run", "-c", str(config), "--endpoint",
                server.imds_url, "--local-address", WEB0, "--log-format", "json",
                "--dry-run")  # fmt: skip
    assert event_id in agent.expect("dry run: would approve the event")
    ran = agent.stop(signal.SIGTERM)
    assert ran.code == 0, ran.stderr
    assert ran.emulator == []
    # python -m forewarn.agent is the same agent
    module = subprocess.run(
        [vm_bin / "python", "-m", "forewarn.agent", "check-config", "-c", str(config)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert module.returncode == 0 and "valid" in module.stdout, module.stderr


def test_the_vm_commands_run_against_a_real_server(
    vm_bin: Path, tmp_path: Path, start_server: Callable[..., ServerProcess]
) -> None:
    server = start_server(VIRTUAL)
    event_id = trigger(server, "user-reboot", "web-0")
    watch = _vm(vm_bin, tmp_path, "watch", "--url", server.imds_url, "--source-address", WEB0,
                "--interval", "0.1")  # fmt: skip
    assert "[this VM]" in watch.expect(event_id)
    events = _vm(vm_bin, tmp_path, "events", "--url", server.imds_url, "--source-address", WEB0,
                 "--json").wait()  # fmt: skip
    assert [e["EventId"] for e in json.loads(events.stdout)["Events"]] == [event_id]
    approve = _vm(vm_bin, tmp_path, "approve", event_id, "--url", server.imds_url,
                  "--source-address", WEB0).wait()  # fmt: skip
    assert approve.stdout.strip() == f"approved on {server.imds_url}: {event_id}", approve.stderr
    assert "Started" in watch.expect(f"updated {event_id}")
    assert watch.stop(signal.SIGINT).code == 0
    operator = _vm(vm_bin, tmp_path, "--control", server.control_url, "events", "--json").wait()
    if _has(vm_bin, "click"):  # the control API's events: the emulator's click group
        assert [e["status"] for e in json.loads(operator.stdout)] == ["Started"], operator.stderr
    else:
        assert (operator.code, operator.emulator) == (1, [])
        assert "with its [server] extra" in unwrapped(operator.stderr)
        operator.code = 0
    kit = _vm(vm_bin, tmp_path, "conformance", server.imds_url, "--source-address", WEB0,
              "--rate", "50", "--json").wait()  # fmt: skip
    assert (json.loads(kit.stdout)["vm"], json.loads(kit.stdout)["failed"]) == ("web-0", 0)
    for ran in (events, approve, operator, kit):
        assert ran.code == 0 and ran.emulator == [], ran.stderr


def test_the_emulator_and_drivers_name_their_extra(vm_bin: Path, tmp_path: Path) -> None:
    serve = subprocess.run([vm_bin / "forewarn", "serve"], capture_output=True, text=True,
                           timeout=120, cwd=tmp_path)  # fmt: skip
    assert serve.returncode == 1
    missing = "yaml" if _has(vm_bin, "click") else "click"  # click: the [server] extra's
    assert unwrapped(serve.stderr) == (
        "forewarn: error: `forewarn serve` is part of the emulator, which this install lacks "
        f"(no module {missing!r}): install forewarn with its [server] extra: "
        "pip install '<its wheel or checkout>[server]'"
    )
    agent = subprocess.run(
        [vm_bin / "forewarn", "agent", "run", "-c", str(AGENT_EXAMPLE), "--dry-run",
         "--metrics-bind", ""], capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert agent.returncode != 0
    assert unwrapped(agent.stderr).endswith(
        "forewarn agent: error: coordination backend redis needs the redis package: "
        "install forewarn with its [redis] extra: pip install '<its wheel or checkout>[redis]'"
    )


def test_pytest_loads_the_plugin_without_the_emulator(vm_bin: Path, tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(
        "def test_plain():\n    assert True\n\n"
        "def test_with_forewarn(forewarn):\n    pass\n"
    )  # fmt: skip
    ran = subprocess.run([vm_bin / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "test_user.py"], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)  # fmt: skip
    assert "1 passed, 1 error" in ran.stdout, ran.stdout + ran.stderr
    assert (
        "the forewarn fixture runs the emulator, which this install lacks (no module "
        "'uvicorn'): install forewarn with its [server] extra: pip install '<its wheel or "
        "checkout>[server]'" in ran.stdout
    )
    assert "During handling" not in ran.stdout

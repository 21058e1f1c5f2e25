"""The ``forewarn`` console script (``forewarn.script:main``) answers ``--version``
without click, with the click group's line; anything else is the click group's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from click.testing import CliRunner

from forewarn.cli import main as group

_RUN = "import sys; sys.argv = ['forewarn', *sys.argv[1:]]\nfrom forewarn.script import main\n"


def _script(*args: str) -> subprocess.CompletedProcess[str]:
    code = _RUN + "main()\nprint('click' in sys.modules)"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)


def test_version_is_the_groups_line_without_click() -> None:
    out = _script("--version")
    assert out.returncode == 0, out.stderr
    version, loaded = out.stdout.splitlines()
    assert version == CliRunner().invoke(group, ["--version"]).output.strip()
    assert version.startswith("forewarn, version ")
    assert loaded == "False"


def test_other_arguments_go_to_the_click_group() -> None:
    out = _script("--version", "--help")  # not --version alone: click's eager option
    assert out.returncode == 0
    assert out.stdout.startswith("forewarn, version ")
    helped = _script("--help")
    assert helped.returncode == 0
    assert "Usage: forewarn [OPTIONS] COMMAND [ARGS]..." in helped.stdout
    wrong = _script("no-such-command")
    assert wrong.returncode == 2
    assert "No such command 'no-such-command'" in wrong.stderr


def test_python_dash_m_forewarn_is_the_same_command() -> None:
    for args in (["--version"], ["--help"]):
        out = subprocess.run([sys.executable, "-m", "forewarn", *args], capture_output=True,
                             text=True, check=True)  # fmt: skip
        assert out.stdout.startswith(("forewarn, version ", "Usage: forewarn "))
        expected = "forewarn, version " if args == ["--version"] else "Usage: forewarn "
        assert out.stdout.startswith(expected)


def _imports(*command: str) -> tuple[str, set[str]]:
    """What ``command`` (a Python program) prints, and the modules it imported."""
    out = subprocess.run([sys.executable, "-X", "importtime", *command], capture_output=True,
                         text=True, check=True)  # fmt: skip
    names = {line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines()}
    return out.stdout, names


def test_the_installed_script_and_dash_m_answer_version_without_click() -> None:
    line = CliRunner().invoke(group, ["--version"]).output
    script = shutil.which("forewarn", path=os.path.dirname(sys.executable))
    assert script is not None
    for command in ([script, "--version"], ["-m", "forewarn", "--version"]):
        printed, modules = _imports(*command)
        assert printed == line
        assert "forewarn" in modules
        assert "click" not in modules
    printed, modules = _imports(script, "--version", "--help")
    assert printed == line
    assert "click" in modules

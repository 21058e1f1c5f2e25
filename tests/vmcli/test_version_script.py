"""The ``forewarn`` console script (``forewarn.script:main``): the VM's commands and
``--version`` through argparse without click, ``--help`` listing both wings, the rest to
the emulator's click group, which names its extra where click is missing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from forewarn.cli import COMMANDS
from forewarn.vm.parser import VM_COMMANDS

_RUN = "import sys; sys.argv = ['forewarn', *sys.argv[1:]]\nfrom forewarn.script import main\n"


def _script(*args: str, before: str = "") -> subprocess.CompletedProcess[str]:
    code = before + _RUN + "main()\nprint('click' in sys.modules)"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "80"})  # fmt: skip


def test_version_without_click() -> None:
    out = _script("--version")
    assert out.returncode == 0, out.stderr
    version, loaded = out.stdout.splitlines()
    assert version.startswith("forewarn, version ")
    assert loaded == "False"


def test_help_lists_both_wings_without_click() -> None:
    helped = _script("--help")
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("usage: forewarn ")
    assert helped.stdout.rstrip().endswith("False")  # click not loaded
    lines = helped.stdout.splitlines()
    for name in (*VM_COMMANDS, *COMMANDS):
        assert any(line.split()[:1] == [name] for line in lines), name
    assert "  serve        Run the metadata endpoint and the control API." in lines
    assert all(len(line) <= 80 for line in lines), helped.stdout


def test_other_arguments_go_to_the_click_group() -> None:
    wrong = _script("no-such-command")
    assert wrong.returncode == 2
    assert wrong.stderr == "forewarn: error: No such command 'no-such-command'.\n"


def test_without_click_an_emulator_command_names_its_extra() -> None:
    for args in (["serve"], ["--control", "http://127.0.0.1:9", "events"], ["topology"]):
        out = _script(*args, before="import sys; sys.modules['click'] = None\n")
        assert out.returncode == 1, out.stderr
        text = " ".join(line.strip() for line in out.stderr.splitlines())
        word = next(a for a in args if not a.startswith(("-", "http")))  # the command
        assert text == (
            f"forewarn: error: `forewarn {word}` is part of the emulator, which this install "
            "lacks (no module 'click'): install forewarn with its [server] extra: "
            "pip install '<its wheel or checkout>[server]'"
        )


def test_python_dash_m_forewarn_is_the_same_command() -> None:
    for args, expected in ((["--version"], "forewarn, version "), (["--help"], "usage: forewarn ")):
        out = subprocess.run([sys.executable, "-m", "forewarn", *args], capture_output=True,
                             text=True, check=True)  # fmt: skip
        assert out.stdout.startswith(expected)


def _imports(*command: str) -> tuple[str, set[str]]:
    """What ``command`` (a Python program) prints, and the modules it imported."""
    out = subprocess.run([sys.executable, "-X", "importtime", *command], capture_output=True,
                         text=True, check=True)  # fmt: skip
    names = {line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines()}
    return out.stdout, names


def test_the_installed_script_and_dash_m_answer_version_without_click() -> None:
    script = shutil.which("forewarn", path=os.path.dirname(sys.executable))
    assert script is not None
    for command in ([script, "--version"], ["-m", "forewarn", "--version"]):
        printed, modules = _imports(*command)
        assert printed.startswith("forewarn, version ")
        assert "forewarn" in modules
        assert "click" not in modules

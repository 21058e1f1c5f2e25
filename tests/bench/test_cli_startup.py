"""bench/cli_startup.py end to end at one run per command, against a real server."""

from __future__ import annotations

import pytest

from bench import cli_startup


def test_every_command_is_timed_against_the_baselines(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_startup.main(["--runs", "1"]) == 0
    rows = {line[:31].strip(): line[31:].split() for line in capsys.readouterr().out.splitlines()}
    for label in ("python -c pass", "python -c 'import click'", "forewarn --version",
                  "forewarn events --url", "forewarn agent check-config",
                  "forewarn events (control API)"):  # fmt: skip
        assert label in rows, rows
    assert rows["python -c pass"][3] == "1.0"  # x python of python itself
    assert rows["python -c 'import click'"][4] == "1.0"  # x click of click itself
    version_modules = int(rows["forewarn --version"][5])
    assert int(rows["python -c 'import click'"][5]) < version_modules
    assert version_modules < int(rows["forewarn agent check-config"][5])

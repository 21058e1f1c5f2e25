"""``forewarn serve --print-config`` in process: the settings a command line, the
environment and a config file add up to, read by a runner that inherits none of the
caller's forewarn settings."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from forewarn.cli import main

__all__ = ["effective", "serve_runner"]


def serve_runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """A runner in ``tmp_path`` (a config file's relative path is read there), with no
    FOREWARN_* variable from outside."""
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("FOREWARN_"):
            monkeypatch.delenv(name)
    return CliRunner()


def effective(runner: CliRunner, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """The settings ``forewarn serve ARGS`` would run with (it succeeded, said nothing on
    stderr)."""
    result = runner.invoke(main, ["serve", *args, "--print-config"], env=env)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    config: dict[str, Any] = yaml.safe_load(result.stdout)
    return config

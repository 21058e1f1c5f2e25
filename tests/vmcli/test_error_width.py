"""Issue 40: every VM command's error is wrapped at its spaces like the rest of its output
(``COLUMNS=80``, through a pipe as in a terminal), a 60-character path or a long URL whole
on one line, alone on its line when it is itself too long."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import Result, run_cli
from tests.support.serverproc import free_port

LONG = 60


@pytest.fixture
def long_dir(short_tmp: Path) -> Iterator[Path]:
    """A directory whose path, with ``/f``, is exactly ``LONG`` characters."""
    path = short_tmp / ("d" * (LONG - len(str(short_tmp)) - 3))
    path.mkdir()
    assert len(str(path / "f")) == LONG
    yield path


def checked(result: Result, prefix: str, word: str) -> str:
    """The error, unwrapped; each line within 80 columns but a word longer than that alone
    on its line, ``word`` whole on one line."""
    assert result.code != 0, result.stdout
    lines = result.stderr.splitlines()
    assert lines and lines[0].startswith(f"{prefix}: error:"), result.stderr
    assert "Traceback" not in result.stderr
    assert all(len(line) <= 80 or len(line.split()) == 1 for line in lines), result.stderr
    assert all(line.startswith("  ") for line in lines[1:]), result.stderr
    assert any(word in line for line in lines), result.stderr  # whole, to copy
    return " ".join(line.strip() for line in lines)


def test_each_agent_error_naming_a_path_fits_80_columns(long_dir: Path) -> None:
    config = long_dir / "f"
    config.write_text('poll_interval = "often"\n')
    for command in ("check-config", "run"):
        text = checked(run_cli(["agent", command, "-c", str(config)], columns=80),
                       "forewarn agent", str(config))  # fmt: skip
        assert f"{config}: poll_interval" in text, text
    missing = long_dir / "s"
    text = checked(run_cli(["agent", "status", "--state-path", str(missing)], columns=80),
                   "forewarn agent", str(missing))  # fmt: skip
    assert text == f"forewarn agent: error: no state file at {missing} (has the agent run?)"


def test_each_endpoint_error_naming_a_path_or_url_fits_80_columns(long_dir: Path) -> None:
    nowhere = long_dir / "no" / "f"
    url = f"http://127.0.0.1:{free_port()}/{'x' * 50}"
    checked(run_cli(["watch", "--url", url], columns=80), "forewarn", url)
    text = checked(run_cli(["watch", "--record", str(nowhere), "--url", url], columns=80),
                   "forewarn", str(nowhere))  # fmt: skip
    assert f"--record {nowhere}: No such file or directory" in text, text
    checked(run_cli(["events", "--url", url], columns=80), "forewarn", url)
    checked(run_cli(["approve", "X", "--url", url], columns=80), "forewarn", url)
    text = checked(run_cli(["discover", "--lease-file", str(long_dir)], columns=80),
                   "forewarn", str(long_dir))  # fmt: skip
    assert text.endswith(f"{long_dir} is a directory"), text
    text = checked(run_cli(["conformance", url, "--record", str(nowhere)], columns=80),
                   "forewarn", str(nowhere))  # fmt: skip
    assert f"--record {nowhere}: No such file or directory" in text, text


def test_a_word_longer_than_a_line_gets_a_line_of_its_own(short_tmp: Path) -> None:
    deep = short_tmp / ("d" * 90) / "f"
    result = run_cli(["agent", "status", "--state-path", str(deep)], columns=80)
    assert result.stderr.splitlines() == [
        "forewarn agent: error: no state file at",
        f"  {deep}",
        "  (has the agent run?)",
    ]

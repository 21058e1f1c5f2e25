"""How ``forewarn serve`` starts: nothing is created before the listeners are bound, the
database remembers its clock, and start-up mistakes are one line."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.support.serverproc import ServerProcess, free_port


def _serve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "forewarn", "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_taken_port_leaves_no_database_behind(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        db = tmp_path / "new.db"
        result = _serve(
            "--db", str(db), "--imds-bind", f"127.0.0.1:{free_port()}",
            "--control-bind", f"127.0.0.1:{port}",
        )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"forewarn: error: cannot listen on 127.0.0.1:{port}: Address already in use"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_missing_directory_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "dir"
    result = _serve(
        "--db", str(missing / "x.db"), "--imds-bind", "127.0.0.1:0", "--control-bind", "127.0.0.1:0"
    )  # (8170 may be another test's)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"forewarn: error: cannot open database {missing / 'x.db'}: "
        f"directory {missing} does not exist"
    ]


def _banner_summary(server: ServerProcess) -> str:
    """The banner's summary line (printed after the line ``start()`` waits for)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = [line for line in server.banner if " VMs in " in line]
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"no summary line in {server.banner}")


def test_the_database_remembers_its_clock_and_time_scale(
    tmp_path: Path, start_server: Callable[..., ServerProcess]
) -> None:
    db = tmp_path / "clock.db"
    first = start_server(["--clock", "virtual", "--time-scale", "60"], db=db)
    assert "clock virtual, time scale 60;" in _banner_summary(first)
    first.control("POST", "/api/v1/clock/advance", json={"seconds": 3600})
    moved = first.control("GET", "/api/v1/clock").json()["now"]
    first.stop()
    again = start_server([], db=db)  # only --db
    assert "clock virtual, time scale 60;" in _banner_summary(again)
    clock = again.control("GET", "/api/v1/clock").json()
    assert clock["virtual"] is True and clock["time_scale"] == 60
    assert clock["now"] == moved  # a virtual clock resumes where it stood
    again.stop()
    real = start_server(["--clock", "real"], db=db)  # a flag still wins, with a warning
    assert "clock real, time scale 60;" in _banner_summary(real)
    _banner_summary(real)  # the warning comes before it
    assert any("clock kind changed" in line for line in real.banner)

"""Fleet files that ask for too much (a typo in a count, a million VMs listed one by one,
a 50 MB file) fail fast with one line, in a process capped at 1 GB of address space:
counts are checked before anything is built, and the file's size before it is read."""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from forewarn.fleet.loader import MAX_VMS
from forewarn.fleet.yamlfile import MAX_FILE_BYTES

GB = 1024**3


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (GB, GB))


def _write_listed(path: Path, count: int) -> None:
    with path.open("w") as file:
        file.write("location: x\nscopes:\n  - kind: availability_set\n    name: a\n    vms:\n")
        file.writelines(f"      - name: v{i}\n" for i in range(count))


def _write_padded(path: Path, size: int) -> None:
    with path.open("w") as file:
        file.write("location: x\nscopes:\n  - {kind: availability_set, name: a, vms: 3}\n")
        file.write("# " + "x" * size + "\n")


def _check(fleet: Path) -> tuple[int, str, float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "forewarn", "fleet", "check", str(fleet)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_capped,
    )
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


@pytest.mark.parametrize(
    ("name", "write", "expected"),
    [
        ("typo.yaml",
         lambda p: p.write_text("location: x\nscopes:\n  - {kind: scale_set, name: s, vms: 10,"
                                " placement_groups: 1000000000}\n"),
         "line 3: scope 's' asks for 1000000000 placement groups for 10 VMs"),
        ("counted.yaml",
         lambda p: p.write_text("location: x\nscopes:\n"
                                "  - {kind: scale_set, name: s, vms: 600000}\n"
                                "  - {kind: availability_set, name: a, vms: 400001}\n"),
         f"the fleet asks for 1000001 VMs; it may hold at most {MAX_VMS}"),
        ("listed.yaml", lambda p: _write_listed(p, MAX_VMS + 1),
         f"is larger than {MAX_FILE_BYTES // 2**20} MB, the most a fleet file may be"),
        ("fifty-mb.yaml", lambda p: _write_padded(p, 50 * 2**20),
         f"is larger than {MAX_FILE_BYTES // 2**20} MB, the most a fleet file may be"),
    ],
)  # fmt: skip
def test_a_fleet_file_that_asks_too_much_fails_fast_in_one_line(
    tmp_path: Path, name: str, write: object, expected: str
) -> None:
    fleet = tmp_path / name
    write(fleet)  # type: ignore[operator]
    code, output, took = _check(fleet)
    assert code != 0
    assert "Traceback" not in output and "MemoryError" not in output, output[-2000:]
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output[-2000:]
    assert f"fleet file {fleet}" in lines[0] and expected in lines[0], lines[0]
    assert took < 30, f"{took:.1f}s to refuse {name}"


def test_a_file_just_under_the_bound_still_loads_under_the_cap(tmp_path: Path) -> None:
    fleet = tmp_path / "listed.yaml"
    _write_listed(fleet, 20_000)
    assert fleet.stat().st_size < MAX_FILE_BYTES
    code, output, _ = _check(fleet)
    assert code == 0, output[-2000:]
    assert "20000 VMs in 1 scopes" in output

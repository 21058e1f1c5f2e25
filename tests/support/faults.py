"""Real storage faults for tests: a small tmpfs that can fill up or turn read-only.

Mounting needs root (CI runs as root); elsewhere the tests that need it skip, saying why.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["SmallDisk", "small_disk"]


class SmallDisk:
    """A tmpfs of a few MiB mounted for one test."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._filler = root / "filler"

    def fill(self) -> None:
        """Take every free byte (the next write that needs a new block fails: ENOSPC)."""
        fd = os.open(self._filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            for size in (1 << 20, 65536, 4096, 512, 1):
                chunk = b"\0" * size
                try:
                    while True:
                        os.write(fd, chunk)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
        finally:
            os.close(fd)

    def free(self) -> None:
        """Give the space back."""
        with contextlib.suppress(FileNotFoundError):
            self._filler.unlink()

    def read_only(self, on: bool) -> None:
        """Remount read-only (``True``) or read-write again."""
        mode = "ro" if on else "rw"
        subprocess.run(["mount", "-o", f"remount,{mode}", str(self.root)], check=True)


@contextlib.contextmanager
def small_disk(size_mb: int = 8) -> Iterator[SmallDisk]:
    """Mount a tmpfs of ``size_mb`` MiB for the length of the block (root only)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs for a real disk-full fault needs root")
    root = Path(tempfile.mkdtemp(prefix="forewarn-disk-"))
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(root)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        root.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    disk = SmallDisk(root)
    try:
        yield disk
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(root)], capture_output=True)
        subprocess.run(["umount", "-l", str(root)], capture_output=True)
        with contextlib.suppress(OSError):
            root.rmdir()

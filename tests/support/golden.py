"""Golden files: an expected output written once by the code, reviewed by a person, kept in
git, and compared byte for byte (the pattern of amazon-ec2-metadata-mock's
``test/e2e/golden/``). ``FOREWARN_WRITE_GOLDEN=1`` rewrites them from the current code;
review the diff before committing it."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["WRITE_GOLDEN", "check_golden"]

#: Set to rewrite every golden file a test compares with.
WRITE_GOLDEN = "FOREWARN_WRITE_GOLDEN"


def check_golden(path: Path, actual: bytes) -> None:
    """Assert ``actual`` is exactly the golden file at ``path`` (or write it, when asked)."""
    if os.environ.get(WRITE_GOLDEN):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(actual)
    assert path.exists(), f"no golden file {path}: run once with {WRITE_GOLDEN}=1 and review it"
    expected = path.read_bytes()
    assert actual == expected, f"{path.name} differs from the golden file\n{actual!r}\n{expected!r}"

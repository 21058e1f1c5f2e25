"""``DocumentRecorder`` writes the bytes a document was served as, made one line only when
they are not (a replay serves them again: a compact document stays compact), and each
document once; a full disk is an ``error``, the next write tries again, and the file
holds only whole lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from forewarn.client import DocumentRecorder
from forewarn.client.recording import JsonLines
from forewarn.contract import parse_document
from forewarn.replay.recorded import read_recording

COMPACT = b'{"DocumentIncarnation":1,"Events":[]}'
SPACED = b'{"DocumentIncarnation": 2, "Events": []}'
LINES = b'{\n  "DocumentIncarnation": 3,\n  "Events": []\n}\n'


def test_one_line_bodies_are_kept_as_served_others_made_one_line(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    recorder = DocumentRecorder(path, "2020-07-01", "web-0", now=lambda: 5.0)
    for body in (COMPACT, COMPACT, SPACED, LINES):
        recorder(parse_document(body), body)
    recorder.close()
    assert recorder.written == 3  # the same document once
    frames = read_recording(path).frames["web-0"]
    assert [(f.t, f.incarnation, f.body) for f in frames] == [
        (5.0, 1, COMPACT),  # as Azure serves it: replayed so
        (5.0, 2, SPACED),
        (5.0, 3, b'{"DocumentIncarnation": 3, "Events": []}'),
    ]


def test_a_full_disk_is_an_error_until_a_write_succeeds_and_leaves_whole_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "rec.jsonl"
    lines = JsonLines(path, truncate=True)
    recorder = DocumentRecorder(lines, "2020-07-01", "web-0")
    recorder(parse_document(COMPACT), COMPACT)
    real = lines._file.write

    def half_then_full(data: bytes) -> int:  # the disk fills in the middle of a line
        monkeypatch.setattr(lines._file, "write", full)
        return real(bytes(data)[: len(data) // 2])

    def full(data: bytes) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(lines._file, "write", half_then_full)
    recorder(parse_document(SPACED), SPACED)
    assert recorder.error == f"cannot write {path}: No space left on device"
    assert [f.incarnation for f in read_recording(path).frames["web-0"]] == [1]
    monkeypatch.setattr(lines._file, "write", real)
    recorder(parse_document(SPACED), SPACED)  # not recorded yet: tried again
    assert recorder.error is None
    lines.close()
    assert [f.incarnation for f in read_recording(path).frames["web-0"]] == [1, 2]


def test_close_after_a_full_disk_does_not_raise() -> None:
    """/dev/full: every write fails; closing holds nothing back to fail again (it raised
    OSError out of ``forewarn conformance --record`` and ``watch --record``)."""
    recorder = DocumentRecorder(JsonLines("/dev/full", truncate=True), "2020-07-01")
    recorder(parse_document(COMPACT), COMPACT)
    assert recorder.error == "cannot write /dev/full: No space left on device"
    recorder.close()

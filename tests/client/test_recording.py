"""``DocumentRecorder`` writes the bytes a document was served as, made one line only when
they are not (a replay serves them again: a compact document stays compact), and each
document once; a full disk is an ``error``, and the next write tries again."""

from __future__ import annotations

import json
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


def test_a_failed_write_is_an_error_until_one_succeeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = JsonLines(tmp_path / "rec.jsonl", truncate=True)
    recorder = DocumentRecorder(lines, "2020-07-01")
    full = OSError(28, "No space left on device")

    def refuse(data: bytes) -> int:
        raise full

    real = lines._file.write
    monkeypatch.setattr(lines._file, "write", refuse)
    recorder(parse_document(COMPACT), COMPACT)
    assert recorder.error == f"cannot write {tmp_path / 'rec.jsonl'}: No space left on device"
    monkeypatch.setattr(lines._file, "write", real)
    recorder(parse_document(COMPACT), COMPACT)  # not recorded yet: tried again
    assert recorder.error is None
    lines.close()
    (line,) = (json.loads(x) for x in (tmp_path / "rec.jsonl").read_text().splitlines())
    assert line["incarnation"] == 1

"""Reading a recorded or captured sequence of documents (JSON lines) for replay.

The format is what ``forewarn serve --record`` writes: one object per line with ``t``
(seconds: POSIX time or any other origin, only differences matter), ``vm``,
``api_version``, ``incarnation`` and ``body`` (the document exactly as served). A file
captured by hand may leave out ``vm`` (one VM), ``api_version`` (the document is served for
every version) and ``incarnation`` (read from the body), and may hold blank lines and
``#`` comments. Lines with ``served`` (how often a document was served) are counts, not
documents, and lines with ``exchange`` (a request and its answer, as ``forewarn
conformance --record`` writes them) are for people; both are skipped. Every mistake names
the file and the line.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import msgspec

from forewarn.contract import Document, DocumentFormatError, lookup_version, parse_document

__all__ = [
    "CAPTURED",
    "CAPTURED_TIME_SCALE",
    "Frame",
    "Recording",
    "RecordingError",
    "captured_text",
    "parse_recording",
    "read_recording",
]

#: Captures shipped with forewarn (``forewarn replay --example NAME``): name → what it is.
CAPTURED: dict[str, str] = {
    "contract": "documents built from the payloads the wire contract quotes: a host-maintenance "
    "Freeze (2020-07-01 and 2017-03-01 renderings) and a user reboot",
}

_TOO_DEEP = "nested too deeply to be a Scheduled Events document"

#: The time scale each shipped capture plays at unless told otherwise (its span at 1 would
#: take hours).
CAPTURED_TIME_SCALE: dict[str, float] = {"contract": 60.0}

#: The VM of a capture that names none.
DEFAULT_VM = "vm"


class RecordingError(ValueError):
    """A recording that cannot be replayed; the message names the file and line."""


class _Line(msgspec.Struct, forbid_unknown_fields=True):
    t: float
    vm: str = DEFAULT_VM
    api_version: str | None = None
    incarnation: int | None = None
    body: msgspec.Raw = msgspec.Raw()  # empty: none (Raw cannot be in a union)
    served: int | None = None
    exchange: msgspec.Raw = msgspec.Raw()  # a request and its answer: not a document


@dataclass(frozen=True, slots=True)
class Frame:
    """One document and when it was first served (``t``, in the recording's seconds)."""

    t: float
    vm: str
    api_version: str | None
    incarnation: int
    body: bytes
    document: Document
    line: int


@dataclass(frozen=True, slots=True)
class Recording:
    """Every VM's frames, in the order of their times."""

    source: str
    frames: dict[str, tuple[Frame, ...]]

    def for_vm(self, vm: str | None) -> tuple[str, tuple[Frame, ...]]:
        """The frames of ``vm`` (any case), or of the only VM when None."""
        if vm is None:
            if len(self.frames) != 1:
                names = ", ".join(sorted(self.frames))
                raise RecordingError(
                    f"{self.source} holds documents of {len(self.frames)} VMs ({names}); "
                    "choose one with --vm"
                )
            return next(iter(self.frames.items()))
        for name, frames in self.frames.items():
            if name.lower() == vm.lower():
                return name, frames
        raise RecordingError(
            f"{self.source} has no documents of VM {vm!r}; it has {', '.join(sorted(self.frames))}"
        )


def _frame(line: _Line, source: str, number: int) -> Frame:
    where = f"{source}, line {number}"
    try:
        document = parse_document(line.body)
    except RecursionError:
        raise RecordingError(f"{where}: {_TOO_DEEP}") from None
    except DocumentFormatError as exc:
        raise RecordingError(f"{where}: body is not a Scheduled Events document: {exc}") from None
    if line.api_version is not None and lookup_version(line.api_version) is None:
        raise RecordingError(f"{where}: unknown api_version {line.api_version!r}")
    incarnation = document.incarnation if line.incarnation is None else line.incarnation
    return Frame(line.t, line.vm, line.api_version, incarnation, bytes(line.body), document, number)


def parse_recording(text: str, source: str) -> Recording:
    """The frames in ``text`` (JSON lines), by VM; ``source`` names it in errors."""
    decoder = msgspec.json.Decoder(_Line)
    frames: dict[str, list[Frame]] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            line = decoder.decode(stripped)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            raise RecordingError(f"{source}, line {number}: {exc}") from None
        except RecursionError:
            raise RecordingError(f"{source}, line {number}: {_TOO_DEEP}") from None
        if not line.body:
            if line.served is None and not line.exchange:
                raise RecordingError(
                    f"{source}, line {number}: neither a body, a count nor an exchange"
                )
            continue
        frames.setdefault(line.vm, []).append(_frame(line, source, number))
    if not frames:
        raise RecordingError(f"{source} holds no document")
    ordered = {vm: tuple(sorted(fs, key=lambda f: f.t)) for vm, fs in frames.items()}
    return Recording(source, ordered)


def read_recording(path: str | Path) -> Recording:
    """``parse_recording`` of a file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise RecordingError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise RecordingError(f"{path} is not UTF-8 text (byte {exc.start})") from None
    return parse_recording(text, str(path))


def captured_text(name: str) -> str:
    """The text of a capture shipped with forewarn (``CAPTURED``)."""
    if name not in CAPTURED:
        raise RecordingError(f"no shipped capture called {name!r}; known: {', '.join(CAPTURED)}")
    return resources.files(__package__).joinpath(f"captured/{name}.jsonl").read_text("utf-8")

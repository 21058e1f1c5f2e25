"""Replaying recorded or captured Scheduled Events documents to a VM, with their timing.

``forewarn serve --record`` writes what each VM was served (``forewarn.imds.recorder``);
``forewarn replay`` reads such a file, or a capture of real payloads, and serves one VM's
documents again on the endpoint's own transport, as fast or slow as ``--time-scale`` says.
"""

from forewarn.replay.player import ReplayEndpoint, shift_not_before
from forewarn.replay.recorded import (
    CAPTURED,
    CAPTURED_TIME_SCALE,
    Frame,
    Recording,
    RecordingError,
    captured_text,
    parse_recording,
    read_recording,
)
from forewarn.replay.serve import bind, describe, run_replay

__all__ = [
    "CAPTURED",
    "CAPTURED_TIME_SCALE",
    "Frame",
    "Recording",
    "RecordingError",
    "ReplayEndpoint",
    "bind",
    "captured_text",
    "describe",
    "parse_recording",
    "read_recording",
    "run_replay",
    "shift_not_before",
]

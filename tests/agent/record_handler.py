"""An exec handler for the tests: records each run (start and end) as JSON lines.

usage: record_handler.py LOG NAME [--sleep S] [--gate FILE] [--fail]
Each run appends {"handler", "what": "start"|"end", "t", "phase", "event_id", "vm",
"stdin_event_id", "pid"}. ``--gate`` waits until FILE exists; ``--fail`` exits 1.
"""

import json
import os
import sys
import time


def main() -> int:
    log, name, *rest = sys.argv[1:]
    sleep = float(rest[rest.index("--sleep") + 1]) if "--sleep" in rest else 0.0
    gate = rest[rest.index("--gate") + 1] if "--gate" in rest else None
    event = json.load(sys.stdin)

    def record(what: str) -> None:
        line = {
            "handler": name,
            "what": what,
            "t": time.time(),
            "phase": os.environ.get("FOREWARN_PHASE"),
            "event_id": os.environ.get("FOREWARN_EVENT_ID"),
            "vm": os.environ.get("FOREWARN_VM_NAME"),
            "stdin_event_id": event.get("EventId"),
            "pid": os.getpid(),
        }
        with open(log, "a") as stream:
            stream.write(json.dumps(line) + "\n")

    record("start")
    while gate is not None and not os.path.exists(gate):
        time.sleep(0.02)
    time.sleep(sleep)
    if "--fail" in rest:
        print(f"{name}: refusing on purpose", file=sys.stderr)
        return 1
    record("end")
    return 0


if __name__ == "__main__":
    sys.exit(main())

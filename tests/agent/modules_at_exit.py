"""``python modules_at_exit.py OUT ARGS...``: ``forewarn ARGS`` as ``python -m forewarn``
runs it; when it ends, however it ends, the names in ``sys.modules`` go to OUT (JSON)."""

import json
import runpy
import sys

out = sys.argv[1]
sys.argv = ["forewarn", *sys.argv[2:]]
try:
    runpy.run_module("forewarn", run_name="__main__", alter_sys=True)
finally:
    with open(out, "w") as stream:
        json.dump(sorted(sys.modules), stream)

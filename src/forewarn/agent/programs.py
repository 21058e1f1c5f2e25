"""Whether the program a handler runs is there: ``check-config`` says so before an event.

A config whose exec handler names a missing or non-executable file would otherwise be
"valid" and fail only when maintenance is announced, which is the worst time to learn it.
"""

from __future__ import annotations

import os
import shutil

from forewarn.agent.config_schema import ExecSpec, HandlerSpec, KubernetesSpec

__all__ = ["missing_program"]


def _check(program: str, cwd: str | None) -> str:
    if "/" not in program:
        return "" if shutil.which(program) else f"{program!r} is not on PATH"
    path = program if os.path.isabs(program) or cwd is None else os.path.join(cwd, program)
    if not os.path.exists(path):
        return f"{program!r} does not exist"
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        return f"{program!r} is not executable"
    return ""


def missing_program(spec: HandlerSpec) -> str:
    """Why the handler's program cannot run ("" when it can, or runs no program)."""
    if isinstance(spec, ExecSpec):
        return _check(spec.argv[0], spec.cwd)
    if isinstance(spec, KubernetesSpec):
        return _check(spec.kubectl, None)
    return ""

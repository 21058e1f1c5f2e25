"""Reading YAML written by people: duplicate keys are mistakes, errors fit on one line.

A file's data is checked later, against typed specs whose errors carry a path such as
``$.scopes[1].vms[0].name``; ``line_of`` turns that path back into the line a person
wrote, so every mistake names its file, line and key. The line is looked up only when
there is an error (the YAML is composed again), so loading a 100,000-VM fleet keeps no
node tree around.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from forewarn.fleet.errors import YamlError

__all__ = ["MAX_FILE_BYTES", "YamlError", "line_in_text", "line_of", "read_yaml"]

#: Bytes of a fleet file: 1,000,000 VMs given as counts take a few lines; listed one by
#: one, some 200,000 fit (read in some 400 MB). Past it, reading alone would cost
#: gigabytes and minutes.
MAX_FILE_BYTES = 4 * 1024 * 1024


if TYPE_CHECKING:
    _SafeLoader = yaml.SafeLoader
else:  # libyaml's parser when PyYAML has it: a fleet file may list 100,000 VMs
    _SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_SafeLoader):
    """A safe loader that refuses a key given twice in one mapping (PyYAML keeps the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                mark = key_node.start_mark
                raise YamlError(
                    f"key {key!r} is given twice (line {mark.line + 1}, column {mark.column + 1})"
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _one_line(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is not None:
        return f"{problem} (line {mark.line + 1}, column {mark.column + 1})"
    return " ".join(str(exc).split())


def read_yaml(path: str | Path) -> Any:
    """The data in a YAML (or JSON) file; YamlError or OSError otherwise."""
    with Path(path).open("rb") as file:
        raw = file.read(MAX_FILE_BYTES + 1)  # a special file (a pipe) has no size to ask
    if len(raw) > MAX_FILE_BYTES:
        raise YamlError(
            f"{path} is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB, the most a fleet "
            "file may be (give large scopes as counts, `vms: 1000`, not one by one)"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise YamlError(f"{path} is not UTF-8 text (byte {exc.start})") from None
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except YamlError as exc:
        raise YamlError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise YamlError(f"{path} is not valid YAML: {_one_line(exc)}") from None


_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+|\.\.\.)\]")


def _steps(json_path: str) -> list[str | int | None]:
    """``$.a[2].b[...]`` as ``["a", 2, "b", None]`` (None: a key the path does not name)."""
    out: list[str | int | None] = []
    for name, index in _STEP.findall(json_path.removeprefix("$")):
        if name:
            out.append(name)
        else:
            out.append(None if index == "..." else int(index))
    return out


def line_in_text(text: str, json_path: str) -> int | None:
    """The 1-based line of the entry ``json_path`` names in YAML ``text``.

    A key's own line when the path ends at a key; the nearest enclosing entry's line when
    the path goes further than the file (a required key left out); None when the text is
    not YAML or the path leaves it at once.
    """
    try:
        node: yaml.Node | None = yaml.compose(text, Loader=_SafeLoader)
    except yaml.YAMLError:
        return None
    if node is None:
        return None
    line = node.start_mark.line + 1
    for step in _steps(json_path):
        if isinstance(node, yaml.MappingNode) and isinstance(step, str):
            found = next(
                (
                    (k, v)
                    for k, v in node.value
                    if isinstance(k, yaml.ScalarNode) and k.value == step
                ),
                None,
            )
            if found is None:
                break
            line = found[0].start_mark.line + 1
            node = found[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int):
            if not 0 <= step < len(node.value):
                break
            node = node.value[step]
            line = node.start_mark.line + 1
        else:
            break
    return line


def line_of(path: str | Path, json_path: str) -> int | None:
    """``line_in_text`` for a file; None when the file cannot be read (again)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return line_in_text(text, json_path)

"""Reading YAML written by people: duplicate keys are mistakes, errors fit on one line."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

__all__ = ["YamlError", "read_yaml"]


class YamlError(ValueError):
    """A file that is not valid YAML (the message is one line, with file and position)."""


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
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise YamlError(f"{path} is not UTF-8 text (byte {exc.start})") from None
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except YamlError as exc:
        raise YamlError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise YamlError(f"{path} is not valid YAML: {_one_line(exc)}") from None

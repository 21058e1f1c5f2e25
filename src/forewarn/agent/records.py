"""The agent's typed records (dataclasses), built from TOML data with clear errors.

``convert(data, AgentConfig)`` checks every value against its field's type and bounds
and builds the records; what it refuses is an ``Invalid`` naming the key's path
(``rules[1].min_vms``), the value's fault and what is allowed (``expected `int` >= 0``,
``invalid enum value 'x'``, ``unknown key``). A union of records is told
apart by its ``type`` key (each record's ``TAG``). From the environment's strings
(``strict=False``) numbers, booleans and ``null`` are read too. ``json_schema`` describes
the same types for the reference page.
"""

from __future__ import annotations

import dataclasses
import enum
import re
import types
import typing
from functools import cache
from typing import Any

__all__ = ["TAG_FIELD", "Bounds", "Invalid", "convert", "hints", "json_schema", "to_builtins"]

#: The key that says which record of a union a table is (``type = "exec"``).
TAG_FIELD = "type"


class Bounds:
    """Bounds of an ``Annotated`` number (``ge``, ``gt``, ``le``) or list (``min_length``)."""

    __slots__ = ("ge", "gt", "le", "min_length")

    def __init__(
        self,
        *,
        ge: float | None = None,
        gt: float | None = None,
        le: float | None = None,
        min_length: int | None = None,
    ) -> None:
        self.ge, self.gt, self.le, self.min_length = ge, gt, le, min_length

    def problem(self, value: Any, kind: type) -> str | None:
        """What ``value`` breaks (the first bound, lower ones first), or None; NaN keeps
        within none."""
        if self.min_length is not None:
            if len(value) < self.min_length:
                return f"expected `array` of length >= {self.min_length}"
            return None
        broken = (
            (">=", self.ge) if self.ge is not None and not value >= self.ge
            else (">", self.gt) if self.gt is not None and not value > self.gt
            else ("<=", self.le) if self.le is not None and not value <= self.le
            else None
        )  # fmt: skip
        if broken is None:
            return None
        return f"expected `{_NAMES[kind]}` {broken[0]} {kind(broken[1])!r}"


class Invalid(ValueError):
    """A value its type refuses: ``path`` (``""``: the whole) and ``message``."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path or '(top level)'}: {message}")
        self.path = path
        self.message = message


#: How an error names a type (JSON's words, as the file's reader thinks of them).
_NAMES: dict[Any, str] = {str: "str", int: "int", float: "float", bool: "bool",
                          list: "array", dict: "object", type(None): "null"}  # fmt: skip
#: From the environment's strings: numbers as JSON writes them (and inf, nan), booleans.
_INTEGER = re.compile(r"-?[0-9]+")
_DECIMAL = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|-?inf|nan", re.I)
_BOOLEANS = {"true": True, "false": False, "1": True, "0": False}


def _got(value: Any) -> str:
    return _NAMES.get(type(value)) or type(value).__name__


def _at(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


@cache
def hints(record: type) -> dict[str, Any]:
    """Each field of ``record`` and its type (resolved, bounds included), in order."""
    resolved = typing.get_type_hints(record, include_extras=True)
    return {f.name: resolved[f.name] for f in dataclasses.fields(record)}


def _expected(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _expected(typing.get_args(tp)[0])
    if origin is typing.Union or origin is types.UnionType:
        return " | ".join(_expected(a) for a in typing.get_args(tp))
    if origin is not None:
        return _NAMES[origin]
    if dataclasses.is_dataclass(tp):
        return "object"
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "str"
    return _NAMES.get(tp, getattr(tp, "__name__", str(tp)))


def _wrong(value: Any, tp: Any, path: str) -> Invalid:
    return Invalid(path, f"expected `{_expected(tp)}`, got `{_got(value)}`")


def _number(value: Any, tp: type, lax: bool, path: str) -> Any:
    if type(value) is int:
        return value if tp is int else float(value)
    if tp is float and type(value) is float:
        return value
    if lax and type(value) is str:
        if _INTEGER.fullmatch(value):
            return int(value) if tp is int else float(value)
        if tp is float and _DECIMAL.fullmatch(value):
            return float(value)
    raise _wrong(value, tp, path)


def _record(value: Any, record: type, lax: bool, path: str) -> Any:
    if type(value) is not dict:
        raise _wrong(value, record, path)
    fields = hints(record)
    given: dict[str, Any] = {}
    for key, item in value.items():
        if key == TAG_FIELD and hasattr(record, "TAG"):
            if item != record.TAG:
                raise Invalid(_at(path, key), f"invalid value {item!r} (known: {record.TAG})")
            continue
        if key not in fields:
            raise Invalid(_at(path, key), "unknown key")
        given[key] = _convert(item, fields[key], lax, _at(path, key))
    for spec in dataclasses.fields(record):
        required = spec.default is dataclasses.MISSING
        if required and spec.default_factory is dataclasses.MISSING and spec.name not in given:
            raise Invalid(path, f"object missing required field `{spec.name}`")
    return record(**given)


def _union(value: Any, options: tuple[Any, ...], lax: bool, path: str) -> Any:
    if value is None and type(None) in options:
        return None
    rest = [o for o in options if o is not type(None)]
    if lax and value == "null" and len(rest) < len(options):
        return None
    if len(rest) == 1:
        try:
            return _convert(value, rest[0], lax, path)
        except Invalid as exc:
            if exc.path != path or not exc.message.startswith("expected `"):
                raise
            if "`, got `" not in exc.message:
                raise  # a bound it broke: say which
            raise _wrong(value, typing.Union[tuple(options)], path) from None  # noqa: UP007
    if type(value) is not dict:
        raise Invalid(path, f"expected `object`, got `{_got(value)}`")
    tags = {option.TAG: option for option in rest}
    if TAG_FIELD not in value:
        raise Invalid(path, f"object missing required field `{TAG_FIELD}`")
    record = tags.get(value[TAG_FIELD])
    if record is None:
        known = ", ".join(tags)
        raise Invalid(_at(path, TAG_FIELD), f"invalid value {value[TAG_FIELD]!r} (known: {known})")
    return _record(value, record, lax, path)


def _convert(value: Any, tp: Any, lax: bool, path: str) -> Any:
    """``value`` as ``tp``; ``Invalid`` when it is none."""
    if tp is Any:
        return value
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        inner, *extras = typing.get_args(tp)
        converted = _convert(value, inner, lax, path)
        for bounds in extras:
            problem = bounds.problem(converted, inner) if isinstance(bounds, Bounds) else None
            if problem:
                raise Invalid(path, problem)
        return converted
    if origin is list:
        if type(value) is not list:
            raise _wrong(value, tp, path)
        (item,) = typing.get_args(tp)
        return [_convert(v, item, lax, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if type(value) is not dict:
            raise _wrong(value, tp, path)
        _, item = typing.get_args(tp)
        return {k: _convert(v, item, lax, _at(path, k)) for k, v in value.items()}
    if origin is typing.Union or origin is types.UnionType:
        return _union(value, typing.get_args(tp), lax, path)
    if tp is str:
        if type(value) is str:
            return value
        raise _wrong(value, tp, path)
    if tp is bool:
        if type(value) is bool:
            return value
        if lax and type(value) is str and value.lower() in _BOOLEANS:
            return _BOOLEANS[value.lower()]
        raise _wrong(value, tp, path)
    if tp is int or tp is float:
        return _number(value, tp, lax, path)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        if type(value) is tp:
            return value
        if type(value) is not str:
            raise _wrong(value, tp, path)
        if value not in tp._value2member_map_:
            raise Invalid(path, f"invalid enum value {value!r}")
        return tp(value)
    if dataclasses.is_dataclass(tp):
        return _record(value, typing.cast(type, tp), lax, path)
    raise TypeError(f"no conversion to {tp!r}")


def convert(value: Any, tp: Any, *, strict: bool = True) -> Any:
    """``value`` (TOML's data; with ``strict=False`` also the environment's strings) as
    ``tp``; ``Invalid`` naming the path when it is not one."""
    return _convert(value, tp, not strict, "")


def to_builtins(value: Any) -> Any:
    """``value`` as plain data: a record as a dict of its fields (its tag first), enums as
    their values, dates and times as ISO 8601 text."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        data: dict[str, Any] = {}
        if hasattr(value, "TAG"):
            data[TAG_FIELD] = value.TAG
        for spec in dataclasses.fields(value):
            data[spec.name] = to_builtins(getattr(value, spec.name))
        return data
    if isinstance(value, enum.Enum):
        return to_builtins(value.value)
    if isinstance(value, list | tuple):
        return [to_builtins(v) for v in value]
    if isinstance(value, dict):
        return {k: to_builtins(v) for k, v in value.items()}
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


# ------------------------------------------------------------------ the JSON Schema


def _schema(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    origin = typing.get_origin(tp)
    if tp is Any:
        return {}
    if origin is typing.Annotated:
        inner, *extras = typing.get_args(tp)
        out = _schema(inner, defs)
        for bounds in extras:
            if isinstance(bounds, Bounds):
                given = {"minimum": bounds.ge, "exclusiveMinimum": bounds.gt,
                         "maximum": bounds.le, "minItems": bounds.min_length}  # fmt: skip
                out.update({k: v for k, v in given.items() if v is not None})
        return out
    if origin is list:
        return {"type": "array", "items": _schema(typing.get_args(tp)[0], defs)}
    if origin is dict:
        item = typing.get_args(tp)[1]
        return {"type": "object"} | (
            {} if item is Any else {"additionalProperties": _schema(item, defs)}
        )
    if origin is typing.Union or origin is types.UnionType:
        options = typing.get_args(tp)
        out = {"anyOf": [_schema(o, defs) for o in options]}
        tagged = [o for o in options if hasattr(o, "TAG")]
        if len(tagged) > 1:
            mapping = {o.TAG: f"#/$defs/{o.__name__}" for o in tagged}
            out["discriminator"] = {"propertyName": TAG_FIELD, "mapping": mapping}
        return out
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        if tp.__name__ not in defs:
            defs[tp.__name__] = {"title": tp.__name__, "description": _doc(tp),
                                 "enum": sorted(str(m.value) for m in tp)}  # fmt: skip
        return {"$ref": f"#/$defs/{tp.__name__}"}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        _record_schema(tp, defs)
        return {"$ref": f"#/$defs/{tp.__name__}"}
    kinds = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}
    return {"type": kinds[tp]}


def _doc(kind: type) -> str:
    from inspect import cleandoc  # the reference page's only

    return cleandoc(kind.__doc__ or "")


def _record_schema(record: type, defs: dict[str, Any]) -> None:
    name = record.__name__
    if name in defs:
        return
    definition: dict[str, Any] = {"title": name, "description": _doc(record)}
    defs[name] = definition
    properties: dict[str, Any] = {}
    required: list[str] = []
    if hasattr(record, "TAG"):
        properties[TAG_FIELD] = {"enum": [record.TAG]}
        required.append(TAG_FIELD)
    types_of = hints(record)
    for spec in dataclasses.fields(record):
        prop = _schema(types_of[spec.name], defs)
        if spec.default is not dataclasses.MISSING:
            prop["default"] = to_builtins(spec.default)
        elif spec.default_factory is not dataclasses.MISSING:
            prop["default"] = to_builtins(spec.default_factory())
        else:
            required.append(spec.name)
        properties[spec.name] = prop
    definition.update(type="object", properties=properties, required=required,
                      additionalProperties=False)  # fmt: skip


def json_schema(root: type) -> dict[str, Any]:
    """The JSON Schema of ``root`` and every type it holds (each under ``$defs``)."""
    defs: dict[str, Any] = {}
    _record_schema(root, defs)
    return {"$ref": f"#/$defs/{root.__name__}", "$defs": defs}

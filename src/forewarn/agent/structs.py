"""Typed records for the agent's configuration, converted from TOML data without msgspec.

The configuration was msgspec structs, and msgspec (its C core, with decimal, uuid,
platform and its own modules) was ~1 MB of every VM's idle agent for one conversion at
start-up. ``Struct`` here is what the configuration used of msgspec's: keyword-only
fields with defaults (mutable ones copied), a tag for a union of structs, equality,
``repr``, ``fields``, ``replace`` and ``to_builtins``.

``convert`` reads what a valid configuration holds (TOML's types, an int where a float is
wanted; from the environment's strings, plain numbers and true/false) and builds the
records itself. Anything else, an invalid value above all, goes to msgspec, imported
then, through the same types written as msgspec structs (``msgspec_type``): its answer
is the one the configuration always gave, error message and all, and an agent whose
configuration is valid never loads msgspec. tests/agent/test_structs.py holds the two
equal, on valid and invalid input alike.
"""

from __future__ import annotations

import enum
import math
import re
import types
import typing
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

__all__ = [
    "Field",
    "Meta",
    "Struct",
    "StructConfig",
    "ValidationError",
    "convert",
    "field",
    "fields",
    "msgspec_type",
    "replace",
    "to_builtins",
]

_S = TypeVar("_S", bound="Struct")


class ValidationError(ValueError):
    """A value the type refuses: msgspec's message (``... - at `$.path```)."""


class Meta:
    """Bounds of an ``Annotated`` number or list (msgspec's ``Meta`` of the same name)."""

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

    def holds(self, value: Any) -> bool:
        """Whether ``value`` keeps within every bound (NaN keeps within none)."""
        if self.min_length is not None:
            return bool(len(value) >= self.min_length)
        return (
            (self.ge is None or value >= self.ge)
            and (self.gt is None or value > self.gt)
            and (self.le is None or value <= self.le)
        )

    def given(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__ if getattr(self, k) is not None}


_NO_DEFAULT: Any = object()


class Field:
    """One field: its name, type (resolved), and default or default factory."""

    __slots__ = ("default", "default_factory", "name", "type")

    def __init__(
        self, name: str, type_: Any, default: Any, default_factory: Callable[[], Any] | None
    ) -> None:
        self.name, self.type = name, type_
        self.default, self.default_factory = default, default_factory

    @property
    def required(self) -> bool:
        return self.default is _NO_DEFAULT and self.default_factory is None

    def make_default(self) -> Any:
        if self.default_factory is not None:
            return self.default_factory()
        if isinstance(self.default, list | dict | set):
            return self.default.copy()  # msgspec copies an empty [] / {} default
        return self.default


class _Factory:
    __slots__ = ("factory",)

    def __init__(self, factory: Callable[[], Any]) -> None:
        self.factory = factory


def field(*, default_factory: Callable[[], Any]) -> Any:
    """A default made anew for each record (msgspec's ``field(default_factory=...)``)."""
    return _Factory(default_factory)


class StructConfig:
    """What ``__struct_config__`` says of a struct, as msgspec's does: its tag, if any."""

    __slots__ = ("forbid_unknown_fields", "tag", "tag_field")

    def __init__(self, tag_field: str | None, tag: str | None, forbid: bool) -> None:
        self.tag_field, self.tag, self.forbid_unknown_fields = tag_field, tag, forbid


class Struct:
    """A record of keyword-only fields, declared by annotations with defaults as values.

    ``class X(Struct, forbid_unknown_fields=True, tag_field="type", tag="x")``; a
    subclass adds fields after its base's and may give one of them a new default."""

    __struct_config__: ClassVar[StructConfig] = StructConfig(None, None, False)
    __struct_fields__: ClassVar[tuple[str, ...]] = ()
    #: Declared defaults of this class and its bases, by name (resolved on first use).
    __struct_defaults__: ClassVar[dict[str, Any]] = {}
    __struct_resolved__: ClassVar[dict[str, Field] | None] = None

    def __init_subclass__(
        cls,
        *,
        forbid_unknown_fields: bool | None = None,
        tag_field: str | None = None,
        tag: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        base = cls.__struct_config__
        forbid = (
            base.forbid_unknown_fields if forbid_unknown_fields is None else forbid_unknown_fields
        )
        cls.__struct_config__ = StructConfig(tag_field or base.tag_field, tag, forbid)
        names = list(cls.__struct_fields__)
        defaults = dict(cls.__struct_defaults__)
        for name in cls.__dict__.get("__annotations__", {}):  # noqa: RUF063  # no inspect
            if name.startswith("__"):
                continue
            if name not in names:
                names.append(name)
            if name in cls.__dict__:
                defaults[name] = cls.__dict__[name]
                delattr(cls, name)  # a default is the field's, not a class attribute
            else:
                defaults.setdefault(name, _NO_DEFAULT)
        cls.__struct_fields__ = tuple(names)
        cls.__struct_defaults__ = defaults
        cls.__struct_resolved__ = None

    @classmethod
    def _fields(cls) -> dict[str, Field]:
        resolved = cls.__dict__.get("__struct_resolved__")
        if resolved is None:
            hints = typing.get_type_hints(cls, include_extras=True)
            resolved = {}
            for name in cls.__struct_fields__:
                default = cls.__struct_defaults__[name]
                factory = default.factory if isinstance(default, _Factory) else None
                plain = _NO_DEFAULT if factory is not None else default
                resolved[name] = Field(name, hints[name], plain, factory)
            cls.__struct_resolved__ = resolved
        return resolved

    def __init__(self, **values: Any) -> None:
        known = self._fields()
        unknown = set(values) - set(known)
        if unknown:
            raise TypeError(f"Unexpected keyword argument {min(unknown)!r}")
        for name, spec in known.items():
            if name in values:
                value = values[name]
            elif spec.required:
                raise TypeError(f"Missing required argument {name!r}")
            else:
                value = spec.make_default()
            object.__setattr__(self, name, value)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.__struct_fields__)

    __hash__ = None  # type: ignore[assignment]  # mutable, as msgspec's structs

    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__struct_fields__)
        return f"{type(self).__name__}({shown})"


def fields(struct: type[Struct] | Struct) -> tuple[Field, ...]:
    """The fields of ``struct`` in order (msgspec's ``structs.fields``)."""
    cls = struct if isinstance(struct, type) else type(struct)
    return tuple(cls._fields().values())


def replace(struct: _S, **changes: Any) -> _S:
    """A copy of ``struct`` with ``changes`` (msgspec's ``structs.replace``)."""
    values = {name: getattr(struct, name) for name in struct.__struct_fields__}
    return type(struct)(**{**values, **changes})


def to_builtins(value: Any) -> Any:
    """``value`` as plain data, as ``msgspec.to_builtins`` makes it: a struct as a dict of
    its fields (its tag first), enums as their values."""
    if isinstance(value, Struct):
        config = value.__struct_config__
        data: dict[str, Any] = {}
        if config.tag_field is not None and config.tag is not None:
            data[config.tag_field] = config.tag
        for name in value.__struct_fields__:
            data[name] = to_builtins(getattr(value, name))
        return data
    if isinstance(value, enum.Enum):
        return to_builtins(value.value)
    if value is None or type(value) in (str, int, float, bool):
        return value
    if type(value) is list or type(value) is tuple:
        return [to_builtins(v) for v in value]
    if type(value) is dict and all(type(k) is str for k in value):
        return {k: to_builtins(v) for k, v in value.items()}
    import msgspec  # anything else (a TOML date in a webhook body): msgspec's form

    return msgspec.to_builtins(value)


# ------------------------------------------------------------------ conversion


class _Doubt(Exception):
    """A value this module does not vouch for: msgspec decides."""


#: JSON's numbers (what msgspec reads from a string without doubt): no "+", no "007".
_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
_DECIMAL = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
#: The strings msgspec reads as booleans (in any case).
_BOOLEANS = {"true": True, "false": False, "1": True, "0": False}
#: The widest int msgspec takes as an int, and the widest it takes as an exact float.
_INT_LIMIT, _FLOAT_EXACT = 1 << 63, 1 << 53


def _is_struct(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, Struct)


def _number(value: Any, tp: type, lax: bool) -> Any:
    if tp is int:
        if type(value) is int and -_INT_LIMIT <= value < _INT_LIMIT:
            return value
        if lax and type(value) is str and _INTEGER.fullmatch(value) and len(value) < 19:
            return int(value)
        raise _Doubt
    if type(value) is float:
        return value
    if type(value) is int and -_FLOAT_EXACT <= value <= _FLOAT_EXACT:
        return float(value)
    if lax and type(value) is str and _DECIMAL.fullmatch(value) and len(value) < 32:
        number = float(value)
        if math.isfinite(number):
            return number
    raise _Doubt


def _struct(value: Any, cls: type[Struct], lax: bool) -> Struct:
    if type(value) is not dict:
        raise _Doubt
    config = cls.__struct_config__
    known = cls._fields()
    given: dict[str, Any] = {}
    for key, item in value.items():
        if key == config.tag_field:
            if item != config.tag:
                raise _Doubt
            continue
        spec = known.get(key)
        if spec is None:
            if config.forbid_unknown_fields:
                raise _Doubt
            continue
        given[key] = _convert(item, spec.type, lax)
    if any(spec.required and name not in given for name, spec in known.items()):
        raise _Doubt
    return cls(**given)


def _union(value: Any, options: tuple[Any, ...], lax: bool) -> Any:
    if value is None and type(None) in options:
        return None
    rest = [o for o in options if o is not type(None)]
    if len(rest) == 1:
        if lax and value == "null":
            raise _Doubt  # msgspec's lax null
        return _convert(value, rest[0], lax)
    if all(_is_struct(o) for o in rest) and type(value) is dict:
        for option in rest:
            config = option.__struct_config__
            if config.tag_field is not None and value.get(config.tag_field) == config.tag:
                return _struct(value, option, lax)
    raise _Doubt


def _convert(value: Any, tp: Any, lax: bool) -> Any:
    """``value`` as ``tp``, or ``_Doubt``."""
    if tp is Any:
        return value
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        inner, *metas = typing.get_args(tp)
        converted = _convert(value, inner, lax)
        for meta in metas:
            if isinstance(meta, Meta) and not meta.holds(converted):
                raise _Doubt
        return converted
    if origin is list:
        if type(value) is not list:
            raise _Doubt
        (item,) = typing.get_args(tp)
        return [_convert(v, item, lax) for v in value]
    if origin is dict:
        if type(value) is not dict or not all(type(k) is str for k in value):
            raise _Doubt
        _, item = typing.get_args(tp)
        return {k: _convert(v, item, lax) for k, v in value.items()}
    if origin is typing.Union or origin is types.UnionType:
        return _union(value, typing.get_args(tp), lax)
    if tp is str:
        if type(value) is str:
            return value
        raise _Doubt
    if tp is bool:
        if type(value) is bool:
            return value
        if lax and type(value) is str and value.lower() in _BOOLEANS:
            return _BOOLEANS[value.lower()]
        raise _Doubt
    if tp is int or tp is float:
        return _number(value, tp, lax)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        if type(value) is tp:  # a layer converted it already (the environment's)
            return value
        if type(value) is str and value in tp._value2member_map_:
            return tp(value)
        raise _Doubt
    if _is_struct(tp):
        return _struct(value, tp, lax)
    raise _Doubt


def convert(value: Any, tp: Any, *, strict: bool = True) -> Any:
    """``value`` as ``tp``, as ``msgspec.convert(value, tp, strict=strict)`` gives it;
    ``ValidationError`` with msgspec's message when it refuses."""
    try:
        return _convert(value, tp, not strict)
    except _Doubt:
        pass
    import msgspec

    try:
        converted = msgspec.convert(value, msgspec_type(tp), strict=strict)
    except msgspec.ValidationError as exc:
        raise ValidationError(str(exc)) from None
    return _unmirror(converted)


# ------------------------------------------------------------------ msgspec's side

_MIRRORS: dict[type[Struct], Any] = {}
_ORIGINALS: dict[Any, type[Struct]] = {}


def msgspec_type(tp: Any) -> Any:
    """``tp`` written with msgspec's structs and ``Meta`` (what ``convert`` hands msgspec,
    and what msgspec's JSON Schema of the configuration is made from)."""
    import msgspec

    if _is_struct(tp):
        mirror = _MIRRORS.get(tp)
        if mirror is None:
            specs: list[Any] = []
            for f in fields(tp):
                kind = msgspec_type(f.type)
                if f.default_factory is not None:
                    specs.append((f.name, kind, msgspec.field(default_factory=f.default_factory)))
                elif f.required:
                    specs.append((f.name, kind))
                else:
                    specs.append((f.name, kind, f.default))
            config = tp.__struct_config__
            mirror = msgspec.defstruct(
                tp.__name__, specs, kw_only=True,
                forbid_unknown_fields=config.forbid_unknown_fields,
                tag_field=config.tag_field, tag=config.tag,
            )  # fmt: skip
            mirror.__doc__ = tp.__doc__  # its JSON Schema's description
            _MIRRORS[tp], _ORIGINALS[mirror] = mirror, tp
        return mirror
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        extras = [msgspec.Meta(**m.given()) if isinstance(m, Meta) else m for m in args[1:]]
        return typing.Annotated[(msgspec_type(args[0]), *extras)]
    if origin is list or origin is dict:
        return types.GenericAlias(origin, (*args[:-1], msgspec_type(args[-1])))
    if origin is typing.Union or origin is types.UnionType:
        return typing.Union[tuple(msgspec_type(a) for a in args)]  # noqa: UP007
    return tp


def _unmirror(value: Any) -> Any:
    """What msgspec converted, with this module's structs for its mirrors."""
    original = _ORIGINALS.get(type(value))
    if original is not None:
        return original(**{n: _unmirror(getattr(value, n)) for n in original.__struct_fields__})
    if type(value) is list:
        return [_unmirror(v) for v in value]
    if type(value) is dict:
        return {k: _unmirror(v) for k, v in value.items()}
    return value

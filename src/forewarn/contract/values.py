"""Frozen value classes without the dataclasses module: the VM side's model and options.

``@dataclass(frozen=True, slots=True)`` cost every VM command ~25 ms of start-up: importing
dataclasses loads inspect (and ast, dis, tokenize…), and each class is compiled from
generated source. A ``Value`` subclass names its fields in ``__slots__`` (in order) with
their annotations, and writes its typed ``__init__`` (the defaults) on ``set_fields``; it
gets what the decorator gave it: the repr, equality and hashing of its fields (but those
in ``_uncompared``), immutability (``FrozenInstanceError``), pickling and copying,
``__match_args__``; and ``dataclasses.fields``, ``replace``, ``asdict`` and
``is_dataclass`` still work on it (its ``__dataclass_fields__`` is made the first time
something asks, by the dataclasses module, then loaded by whoever asks). Type checkers
see a frozen dataclass (``dataclass_transform``). tests/contract/test_values.py holds each
class equal to the dataclass it was.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, dataclass_transform

__all__ = ["FrozenInstanceError", "Value", "set_fields"]


class FrozenInstanceError(AttributeError):
    """An assignment to (or deletion of) a field of a frozen value, as dataclasses says."""


class _DataclassInfo:
    """``__dataclass_fields__`` (or ``__dataclass_params__``) of a Value class: made on first
    use from a dataclass of the same fields, defaults and comparisons, then kept on it."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: object, owner: type[Value]) -> Any:
        from dataclasses import field, make_dataclass

        names = owner.__slots__
        given = getattr(owner.__init__, "__defaults__", None) or ()
        defaults = dict(zip(names[len(names) - len(given) :], given, strict=True))
        specs = []
        for name in names:
            compare = name not in owner._uncompared
            if name in defaults:
                spec = field(default_factory=_returning(defaults[name]), compare=compare)
            else:
                spec = field(compare=compare)
            specs.append((name, owner.__annotations__.get(name, "Any"), spec))
        shadow: Any = make_dataclass(owner.__name__, specs, frozen=True)
        type.__setattr__(owner, "__dataclass_fields__", shadow.__dataclass_fields__)
        type.__setattr__(owner, "__dataclass_params__", shadow.__dataclass_params__)
        return getattr(owner, self.name)


def _returning(value: object) -> Callable[[], object]:
    """A default as a factory (a default the dataclass would call mutable, too)."""
    return lambda: value


_set = object.__setattr__


def set_fields(value: Value, *fields: object) -> None:
    """Set ``value``'s fields, in ``__slots__`` order: what its ``__init__`` calls (with
    every field: tests/contract/test_values.py reads each one back)."""
    for name, field_value in zip(value.__slots__, fields):  # noqa: B905 (a parse's hot path)
        _set(value, name, field_value)


@dataclass_transform(frozen_default=True)
class Value:
    """The base of a frozen value class (see the module's docstring)."""

    __slots__: ClassVar[tuple[str, ...]] = ()
    #: Fields left out of equality and hashing (``field(compare=False)``).
    _uncompared: ClassVar[frozenset[str]] = frozenset()
    _compared: ClassVar[tuple[str, ...]] = ()
    __match_args__: ClassVar[tuple[str, ...]] = ()
    __dataclass_fields__: ClassVar[dict[str, Any]] = _DataclassInfo()  # type: ignore[assignment]
    __dataclass_params__: ClassVar[Any] = _DataclassInfo()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        setattr(cls, "__match_args__", cls.__slots__)  # noqa: B010 (type checkers: read-only)
        cls._compared = tuple(name for name in cls.__slots__ if name not in cls._uncompared)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__qualname__}({fields})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        names = self._compared
        return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, name) for name in self._compared))

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[type[Value], tuple[object, ...]]:
        return type(self), tuple(getattr(self, name) for name in self.__slots__)

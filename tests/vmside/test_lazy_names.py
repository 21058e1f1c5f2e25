"""Packages that load their modules on first use (a module ``__getattr__``, so the VM
commands and the agent start light) name each export three times by hand: the imports
type checkers read, the names ``__getattr__`` answers, ``__all__``. Found by walking the
source, so a package made lazy later is held too: the three lists agree, and each name
is the object its module defines."""

from __future__ import annotations

import ast
from importlib import import_module
from pathlib import Path

import pytest

import forewarn

SRC = Path(forewarn.__file__).parent


def lazy_packages() -> list[str]:
    found = []
    for init in sorted(SRC.rglob("__init__.py")):
        text = init.read_text(encoding="utf-8")
        if "def __getattr__(" in text or "__getattr__ = lazy_getattr(" in text:
            parts = init.parent.relative_to(SRC.parent).parts
            found.append(".".join(parts))
    return found


def typed_imports(package: str) -> dict[str, str]:
    """Each name imported under ``if TYPE_CHECKING:`` and the module it comes from."""
    tree = ast.parse(Path(import_module(package).__file__ or "").read_text(encoding="utf-8"))
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.module, package
                names |= {alias.asname or alias.name: statement.module for alias in statement.names}
    return names


def test_the_lazy_packages_are_found() -> None:
    assert {"forewarn.contract", "forewarn.client", "forewarn.agent"} <= set(lazy_packages())


@pytest.mark.parametrize("package", lazy_packages())
def test_each_lazy_name_is_exported_and_is_its_modules_own(package: str) -> None:
    module = import_module(package)
    exported = set(module.__all__)
    typed = typed_imports(package)
    assert set(typed) <= exported, f"typed in {package} but not in __all__"
    for name in sorted(exported):
        value = getattr(module, name)  # AttributeError: __getattr__ forgot it
        if name in typed:
            assert value is getattr(import_module(typed[name]), name), name
    lazy = getattr(module, "_LAZY", None)
    if lazy is not None:  # the name -> module map itself (short: a module of the package)
        assert set(lazy) == exported == set(typed)
        assert {name: _absolute(package, where) for name, where in lazy.items()} == typed


def _absolute(package: str, where: str) -> str:
    return where if where.startswith("forewarn.") else f"{package}.{where}"


@pytest.mark.parametrize("package", ["forewarn.client", "forewarn.contract"])
def test_the_client_and_the_contract_map_every_name(package: str) -> None:
    """Both are held by the map check above: every name is loaded on demand, none eagerly."""
    assert isinstance(getattr(import_module(package), "_LAZY", None), dict)

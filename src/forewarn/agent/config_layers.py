"""Layered configuration: defaults < TOML file < environment (``FOREWARN_AGENT_*``) < flags.

The top-level scalar settings, ``coordination.*`` and ``kubernetes.*`` can come from the
environment (``FOREWARN_AGENT_POLL_INTERVAL``, ``FOREWARN_AGENT_COORDINATION_URL``,
``FOREWARN_AGENT_KUBERNETES_NODE``; a list is comma-separated); other handlers and rules
live in the file. Every error names where the bad value came from.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from forewarn.agent import records
from forewarn.agent.config_schema import (
    AgentConfig,
    ConfigError,
    Coordination,
    KubernetesTable,
    check,
    check_value,
)
from forewarn.contract.model import EventSource, EventStatus
from forewarn.contract.versions import EventType

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["ENV_PREFIX", "as_dict", "env_settings", "load_config"]

ENV_PREFIX = "FOREWARN_AGENT_"
#: Environment variables that are not settings of the file (read by the CLI itself).
_CLI_ENV = {"CONFIG"}


def _scalar_fields(record: type) -> dict[str, Any]:
    return {
        name: type_
        for name, type_ in records.hints(record).items()
        if name not in ("coordination", "kubernetes", "handlers", "rules")
    }


_TOP = _scalar_fields(AgentConfig)
#: Tables whose keys the environment may set: ``FOREWARN_AGENT_<TABLE>_<KEY>``.
_TABLES = {
    "coordination": _scalar_fields(Coordination),
    "kubernetes": _scalar_fields(KubernetesTable),
}


def _explain(error: records.Invalid, source: str) -> ConfigError:
    """``rules[0].min_vms: expected `int` >= 0``, from ``source``; an event type, status
    or source not known also says which are."""
    message = error.message
    field = error.path.rpartition(".")[2].partition("[")[0]
    if field in _ENUMS and message.startswith("invalid enum value"):
        message += f" (known: {', '.join(_ENUMS[field])})"
    return ConfigError(f"{source}: {error.path or '(top level)'}: {message}")


def _convert_env(name: str, value: str, type_: Any) -> Any:
    given: Any = value
    if getattr(type_, "__origin__", None) is list:  # a list: comma-separated
        given = [item.strip() for item in value.split(",") if item.strip()]
        given = _canonical(name[len(ENV_PREFIX) :].lower().partition("_")[2], given)
    try:
        converted = records.convert(given, type_, strict=False)
    except records.Invalid as exc:
        why = exc.message + _known(type_)
        raise ConfigError(f"environment {name}={value!r}: {why}") from None
    problem = check_value(name[len(ENV_PREFIX) :].lower(), converted)
    if problem:
        raise ConfigError(f"environment {name}={value!r}: {problem}")
    return converted


_ENUMS: dict[str, tuple[str, ...]] = {
    "event_types": tuple(EventType),
    "statuses": tuple(EventStatus),
    "sources": tuple(EventSource),
}


def _canonical(field: str, values: Any) -> Any:
    """``["reboot"]`` -> ``["Reboot"]``: the contract's names in any case (a typo stays,
    for the enum check to refuse)."""
    known = {name.lower(): name for name in _ENUMS.get(field, ())}
    if not known or not isinstance(values, list):
        return values
    return [known.get(v.lower(), v) if isinstance(v, str) else v for v in values]


def _canonical_tables(merged: dict[str, Any]) -> None:
    tables = [merged.get("kubernetes")]
    if isinstance(merged.get("rules"), list):
        tables += merged["rules"]
    for table in tables:
        if isinstance(table, dict):
            for field in _ENUMS:
                if field in table:
                    table[field] = _canonical(field, table[field])


def _known(type_: Any) -> str:
    """`` (known: Freeze, Reboot, ...)`` for a list of one of the contract's enums."""
    args = getattr(type_, "__args__", ())
    for enum in (EventType, EventStatus, EventSource):
        if enum in args:
            return f" (known: {', '.join(enum)})"
    return ""


def env_settings(environ: Mapping[str, str]) -> dict[str, Any]:
    """Settings given as ``FOREWARN_AGENT_*`` variables, typed; unknown names refused."""
    top: dict[str, Any] = {}
    tables: dict[str, dict[str, Any]] = {}
    for name, value in sorted(environ.items()):
        if not name.startswith(ENV_PREFIX):
            continue
        key = name[len(ENV_PREFIX) :].lower()
        if key.upper() in _CLI_ENV:
            continue
        table, _, sub = key.partition("_")
        if key in _TOP:
            top[key] = _convert_env(name, value, _TOP[key])
        elif sub in _TABLES.get(table, {}):
            tables.setdefault(table, {})[sub] = _convert_env(name, value, _TABLES[table][sub])
        else:
            known = ", ".join(
                [ENV_PREFIX + k.upper() for k in _TOP]
                + [f"{ENV_PREFIX}{t.upper()}_{k.upper()}" for t in _TABLES for k in _TABLES[t]]
            )
            raise ConfigError(f"environment {name}: unknown setting (known: {known})")
    top.update(tables)
    return top


def _read_toml(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as stream:
            return tomllib.load(stream)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not valid TOML: not UTF-8") from None


def _overlay(base: dict[str, Any], layer: Mapping[str, Any]) -> None:
    for key, value in layer.items():
        if key in _TABLES and isinstance(base.get(key), dict):
            base[key] = {**base[key], **value}
        else:
            base[key] = value


def load_config(
    path: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    flags: Mapping[str, Any] | None = None,
) -> AgentConfig:
    """Build the effective configuration; raise ``ConfigError`` naming the bad key."""
    merged: dict[str, Any] = {}
    source = "defaults"
    if path is not None:
        source = os.fspath(path)
        merged = _read_toml(source)
        _canonical_tables(merged)
        try:  # the file alone must be valid: errors then point at the file's keys
            records.convert(merged, AgentConfig)
        except records.Invalid as exc:
            raise _explain(exc, source) from None
    env = env_settings(environ or {})
    _overlay(merged, env)
    given = {k: v for k, v in (flags or {}).items() if v is not None}
    unknown = sorted(set(given) - set(_TOP))
    if unknown:
        raise ConfigError(f"flags: unknown setting {', '.join(unknown)}")
    _overlay(merged, given)
    try:
        config: AgentConfig = records.convert(merged, AgentConfig)
    except records.Invalid as exc:
        raise _explain(exc, "environment or flags") from None
    try:
        config = check(config)
        if config.kubernetes is not None:  # its module only for a node agent
            from forewarn.agent.kubernetes_table import with_kubernetes_table

            config = check(with_kubernetes_table(config))
        return config
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def as_dict(config: AgentConfig) -> dict[str, Any]:
    """The effective configuration as plain data (``--print-config``)."""
    data: dict[str, Any] = records.to_builtins(config)
    return data

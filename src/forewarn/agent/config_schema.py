"""The agent's configuration: one TOML file, typed, with every default written here.

The schema is typed records (dataclasses, read by ``records.convert``), so a wrong type
or an unknown key is refused with the key's path (``rules[1].min_vms``) and what is
allowed; ``check()`` then refuses what types cannot say (a rule naming a handler nobody
defined). Layering (defaults < file < environment < flags) lives
in ``config_layers.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Annotated, Any

from forewarn.agent import records
from forewarn.agent.records import Bounds
from forewarn.contract.model import EventSource, EventStatus
from forewarn.contract.versions import SUPPORTED_VERSIONS, EventType

__all__ = [
    "AgentConfig",
    "Approval",
    "ConfigError",
    "Coordination",
    "ExecSpec",
    "HandlerSpec",
    "KubernetesSpec",
    "KubernetesTable",
    "OnCrash",
    "PythonSpec",
    "RuleSpec",
    "Shutdown",
    "WebhookSpec",
    "check",
    "check_value",
    "json_schema",
    "parse_bind",
]

#: The longest any duration may be: past it a timedelta overflows or a wait never ends.
MAX_SECONDS = 30 * 86400.0
Seconds = Annotated[float, Bounds(ge=0, le=MAX_SECONDS)]
Positive = Annotated[float, Bounds(gt=0, le=MAX_SECONDS)]
Minutes = Annotated[float, Bounds(ge=0, le=MAX_SECONDS / 60)]
PollInterval = Annotated[float, Bounds(ge=0.05, le=3600)]
Count = Annotated[int, Bounds(ge=0, le=1_000_000)]


def parse_bind(bind: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:9465`` for IPv6) -> (host, port): ``metrics_bind``'s parts."""
    host, _, port = bind.rpartition(":")
    return host.strip("[]"), int(port)


class ConfigError(ValueError):
    """A configuration the agent refuses; the message names the file and the key."""


class Approval(StrEnum):
    """When the agent approves (starts early) an event a rule selected."""

    NEVER = "never"
    AFTER_HANDLERS = "after-handlers"
    SOLO = "solo"
    COORDINATED = "coordinated"


class OnDeleted(StrEnum):
    """What the agent does once the endpoint says this VM was deleted (404)."""

    EXIT = "exit"
    IDLE = "idle"


class Shutdown(StrEnum):
    """What SIGTERM does to handlers still running."""

    FINISH = "finish"
    ABANDON = "abandon"


class OnCrash(StrEnum):
    """What a restart does with a handler a crash interrupted."""

    RETRY = "retry"
    FAIL = "fail"


@dataclass(kw_only=True)
class _Handler:
    """Fields every handler has."""

    timeout: Positive = 60.0
    on_receipt: bool = False


@dataclass(kw_only=True)
class ExecSpec(_Handler):
    """Run a program: event fields as ``FOREWARN_*`` env vars, the event JSON on stdin."""

    TAG = "exec"

    argv: Annotated[list[str], Bounds(min_length=1)]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None


@dataclass(kw_only=True)
class WebhookSpec(_Handler):
    """POST a JSON body built from ``body`` (string values are ``string.Template``s)."""

    TAG = "webhook"

    url: str
    timeout: Positive = 10.0
    retries: Count = 3
    backoff: Seconds = 1.0
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] | None = None
    use_proxy_env: bool = True


@dataclass(kw_only=True)
class PythonSpec(_Handler):
    """Call ``module:function`` (sync or async) with the handler context."""

    TAG = "python"

    target: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True)
class KubernetesSpec(_Handler):
    """Taint, cordon and drain this node with kubectl; uncordon and untaint afterwards."""

    TAG = "kubernetes"

    timeout: Positive = 600.0
    #: The node's name; empty: derived from the VM's (``aks-x-vmss_13`` -> ``aks-x-vmss00000d``).
    node: str = ""
    #: Cordon (and taint) but never drain: the pods stay until the platform stops the VM.
    cordon_only: bool = False
    #: Kubernetes Events on the node: why, what was done, what was left.
    events: bool = True
    #: Where those Events are written: ``default``, the kubelet's for node events, or
    #: another one RBAC allows (``kubectl describe node`` finds them in any).
    events_namespace: str = "default"
    #: ``node.kubernetes.io/exclude-from-external-load-balancers`` while out of service.
    exclude_from_lb: bool = False
    #: The ``VMEventScheduled`` node condition AKS's node-problem-detector sets.
    condition: bool = False
    kubectl: str = "kubectl"
    kubeconfig: str = ""
    context: str = ""
    taint_key: str = "forewarn.io/scheduled-event"
    taint_value: str = "true"
    taint_effect: str = "NoSchedule"
    #: Seconds each pod gets to stop; -1: the pod's own terminationGracePeriodSeconds.
    grace_period: Annotated[int, Bounds(ge=-1, le=int(MAX_SECONDS))] = -1
    ignore_daemonsets: bool = True
    delete_emptydir_data: bool = True
    pdb_timeout: Positive = 300.0
    force: bool = False


HandlerSpec = ExecSpec | WebhookSpec | PythonSpec | KubernetesSpec


@dataclass(kw_only=True)
class KubernetesTable(KubernetesSpec):
    """``[kubernetes]``: the kubernetes handler and its rule in one table (a DaemonSet's
    whole configuration can come from ``FOREWARN_AGENT_KUBERNETES_*``)."""

    enabled: bool = True
    event_types: list[EventType] = field(
        default_factory=lambda: [
            EventType.REBOOT,
            EventType.REDEPLOY,
            EventType.FREEZE,
            EventType.PREEMPT,
            EventType.TERMINATE,
        ]
    )
    approval: Approval = Approval.NEVER
    act_minutes_before: Minutes | None = None


@dataclass(kw_only=True)
class RuleSpec:
    """One ordered rule: what it matches, then what it does."""

    name: str = ""
    # ---- match (an empty list or an absent bound matches anything)
    event_types: list[EventType] = field(default_factory=list)
    sources: list[EventSource] = field(default_factory=list)
    statuses: list[EventStatus] = field(default_factory=lambda: [EventStatus.SCHEDULED])
    min_duration: Annotated[int, Bounds(ge=-1)] | None = None
    max_duration: Annotated[int, Bounds(ge=-1)] | None = None
    this_vm: bool | None = None
    min_vms: Count | None = None
    max_vms: Count | None = None
    # ---- action
    ignore: bool = False
    handlers: list[str] = field(default_factory=list)
    recovery: list[str] | None = None
    approval: Approval = Approval.NEVER
    parallel: bool = False
    act_minutes_before: Minutes | None = None
    on_crash: OnCrash = OnCrash.RETRY


@dataclass(kw_only=True)
class Coordination:
    """Where agents of one event's VMs record whether they are ready."""

    backend: str = "redis"
    url: str = "redis://127.0.0.1:6379/0"
    namespace: str = "forewarn"
    ttl: Positive = 86400.0
    table: str = "forewarn_agent_votes"
    #: How long a claim to approve holds if its agent dies before posting (renewed while
    #: it posts); then another agent of the group takes over.
    claim_lease: Positive = 15.0


@dataclass(kw_only=True)
class AgentConfig:
    """Everything the agent reads; the defaults suit a real Azure VM."""

    vm_name: str = ""
    endpoint: str = ""
    local_address: str = ""
    api_version: str = "2020-07-01"
    poll_interval: PollInterval = 1.0
    state_path: str = "/var/lib/forewarn-agent/state.db"
    safety_margin: Seconds = 10.0
    late_timeout: Positive = 5.0
    ignore_freeze_under: Seconds = 10.0
    dry_run: bool = False
    shutdown: Shutdown = Shutdown.FINISH
    shutdown_timeout: Seconds = 30.0
    #: A deleted VM (Preempt, Terminate, scale-in): stop (exit 0) or idle, polling slowly.
    on_deleted: OnDeleted = OnDeleted.EXIT
    metrics_bind: str = "127.0.0.1:9465"
    #: Append each new document the endpoint serves to this file (what replay plays).
    record: str = ""
    log_format: str = "json"
    log_level: str = "info"
    coordination: Coordination | None = None
    kubernetes: KubernetesTable | None = None
    handlers: dict[str, HandlerSpec] = field(default_factory=dict)
    rules: list[RuleSpec] = field(default_factory=list)

    def rule_name(self, index: int) -> str:
        """A rule's name, or ``rules[i]`` when it has none."""
        return self.rules[index].name or f"rules[{index}]"


_TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = re.compile(rf"^{_OCTET}(?:\.{_OCTET}){{3}}\Z")
_BIND = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[^:\[\]]+):(\d{1,5})$")
_NODE = re.compile(r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_LEVELS = ("debug", "info", "warning", "error")


def _err(where: str, message: str) -> ConfigError:
    return ConfigError(f"{where}: {message}")


def _check_handler(name: str, spec: HandlerSpec, where: str = "") -> None:
    where = where or f"handlers.{name}"
    if isinstance(spec, WebhookSpec):
        from forewarn.agent.template import PLACEHOLDERS, placeholders  # webhooks' only

        if not re.match(r"^https?://[^/\s]+", spec.url):
            raise _err(f"{where}.url", f"{spec.url!r} is not an http(s) URL")
        try:
            unknown = sorted(placeholders(spec.body) - set(PLACEHOLDERS))
        except ValueError as exc:  # a lone "$" or "${" in a template
            raise _err(f"{where}.body", f"bad template: {exc}") from None
        if unknown:
            raise _err(
                f"{where}.body",
                f"unknown placeholder {', '.join(unknown)} (known: {', '.join(PLACEHOLDERS)})",
            )
    if isinstance(spec, PythonSpec) and not _TARGET.match(spec.target):
        raise _err(f"{where}.target", f"{spec.target!r} is not module:function")
    if isinstance(spec, KubernetesSpec):
        if spec.taint_effect not in _EFFECTS:
            raise _err(f"{where}.taint_effect", f"must be one of {', '.join(_EFFECTS)}")
        if not spec.taint_key or "=" in spec.taint_key or ":" in spec.taint_key:
            raise _err(f"{where}.taint_key", f"{spec.taint_key!r} is not a taint key")
        if spec.node and not _NODE.match(spec.node):
            raise _err(f"{where}.node", f"{spec.node!r} is not a node name (lowercase RFC 1123)")
        if not _NAMESPACE.match(spec.events_namespace):
            raise _err(
                f"{where}.events_namespace",
                f"{spec.events_namespace!r} is not a namespace (lowercase RFC 1123 label)",
            )


def _check_rule(config: AgentConfig, index: int, rule: RuleSpec) -> None:
    where = f"rules[{index}]"
    if rule.ignore and (rule.handlers or rule.recovery or rule.approval != Approval.NEVER):
        raise _err(where, "an ignore rule takes no handlers, recovery or approval")
    for names in ("handlers", "recovery"):
        for name in getattr(rule, names) or ():
            if name not in config.handlers:
                known = ", ".join(sorted(config.handlers)) or "none"
                raise _err(f"{where}.{names}", f"unknown handler {name!r} (defined: {known})")
    for low, high in (("min_duration", "max_duration"), ("min_vms", "max_vms")):
        lo, hi = getattr(rule, low), getattr(rule, high)
        if lo is not None and hi is not None and lo > hi:
            raise _err(f"{where}.{low}", f"{lo} is more than {high} ({hi})")
    if rule.approval == Approval.COORDINATED and config.coordination is None:
        raise _err(f"{where}.approval", "coordinated needs a [coordination] table")
    if not rule.statuses:
        raise _err(f"{where}.statuses", "must list at least one status")


def _bind_problem(value: str) -> str | None:
    match = _BIND.match(value)
    if value and not match:
        return f'{value!r} is not HOST:PORT ("" turns it off)'
    if match and not 1 <= int(match[2]) <= 65535:
        return f"port {match[2]} is not 1-65535"
    return None


def _address_problem(value: str) -> str | None:
    if not value or _IPV4.match(value):  # a plain IPv4 address, as ipaddress reads it
        return None
    import ipaddress  # for anything else (IPv6, a mistake): ~0.1 MB of an idle agent

    try:
        ipaddress.ip_address(value)
    except ValueError:
        return f'{value!r} is not an IP address ("" lets the system choose)'
    return None


def _version_problem(value: str) -> str | None:
    if value in SUPPORTED_VERSIONS:
        return None
    return f"unknown api-version {value!r} (known: {', '.join(SUPPORTED_VERSIONS)})"


_VALUE_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "metrics_bind": _bind_problem,
    "local_address": _address_problem,
    "api_version": _version_problem,
    "endpoint": lambda v: (
        f"{v!r} is not an http(s) URL" if v and not re.match(r"^https?://[^/\s]+", v) else None
    ),
    "log_format": lambda v: None if v in ("json", "console") else "must be json or console",
    "log_level": lambda v: None if v in _LEVELS else f"must be one of {', '.join(_LEVELS)}",
    "state_path": lambda v: None if v else "must name a file",
}


def check_value(key: str, value: Any) -> str | None:
    """What is wrong with one top-level setting's value (None: nothing), so the
    environment's variables get the same checks as the file's keys."""
    checker = _VALUE_CHECKS.get(key)
    return checker(value) if checker is not None else None


def check(config: AgentConfig) -> AgentConfig:
    """Refuse what the types cannot: dangling names, bad ranges, malformed strings."""
    for name, spec in config.handlers.items():
        _check_handler(name, spec)
    if config.kubernetes is not None:
        _check_handler("kubernetes", config.kubernetes, "kubernetes")
        if not config.kubernetes.event_types:
            raise _err("kubernetes.event_types", "must list at least one event type")
    names: dict[str, int] = {}
    for index, rule in enumerate(config.rules):
        _check_rule(config, index, rule)
        if rule.name:
            if rule.name in names:
                raise _err(
                    f"rules[{index}].name", f"{rule.name!r} is also rules[{names[rule.name]}]"
                )
            names[rule.name] = index
    for key in _VALUE_CHECKS:
        problem = check_value(key, getattr(config, key))
        if problem:
            raise _err(key, problem)
    coordination = config.coordination
    if coordination is not None:
        if coordination.backend not in ("redis", "postgres"):
            raise _err("coordination.backend", "must be redis or postgres")
        schemes = (
            ("redis://", "rediss://", "unix://")
            if coordination.backend == "redis"
            else (
                "postgresql://",
                "postgres://",
            )
        )
        if not coordination.url.startswith(schemes):
            raise _err("coordination.url", f"a {coordination.backend} URL starts with {schemes[0]}")
        if not _IDENT.match(coordination.table):
            raise _err("coordination.table", f"{coordination.table!r} is not a plain SQL name")
        if not coordination.namespace or any(c.isspace() for c in coordination.namespace):
            raise _err("coordination.namespace", "must be a non-empty word")
    return config


def json_schema() -> dict[str, Any]:
    """The configuration's JSON Schema (the reference page's), of these types."""
    return records.json_schema(AgentConfig)

"""The sockets ``forewarn serve`` binds before it creates anything: which, on what ports,
shared how between workers, what a taken port does (nothing stays bound), and the banner."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from forewarn.fabric import Clock
from forewarn.server import Listeners, ServeConfig, banner, bind_listeners, build_runtime, prepare
from tests.support.ports import can_bind, free_ports

FLEET = """
port_base: {base}
scopes:
  - {{kind: availability_set, name: web, vms: 2}}
  - {{kind: standalone, name: solo}}
"""


def port(sock: socket.socket) -> int:
    return int(sock.getsockname()[1])


def reuses_port(sock: socket.socket) -> bool:
    return sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT) != 0


@pytest.fixture
def opened() -> Iterator[list[Listeners]]:
    listeners: list[Listeners] = []
    yield listeners
    for one in listeners:
        one.close()


def config_with_vm_ports(tmp_path: Path, base: int, **options: Any) -> ServeConfig:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(FLEET.format(base=base))
    return ServeConfig(fleet=str(fleet), db=str(tmp_path / "x.db"), **options)


def test_the_endpoint_every_vm_port_and_the_control_api_are_bound(
    tmp_path: Path, opened: list[Listeners]
) -> None:
    base = free_ports(3)
    config = config_with_vm_ports(tmp_path, base, imds_bind=("127.0.0.1:0",),
                                  control_bind="127.0.0.1:0")  # fmt: skip
    topology = prepare(config).topology
    listeners = bind_listeners(config, topology)
    opened.append(listeners)
    assert listeners.vm_ports == {vm.port: name for name, vm in topology.vms.items()}
    assert set(listeners.vm_ports) == {base, base + 1, base + 2}
    assert sorted(port(s) for s in listeners.imds[1:]) == [base, base + 1, base + 2]
    assert not any(can_bind(p) for p in listeners.vm_ports)  # really held
    assert listeners.control_sockets() == [listeners.control]
    assert listeners.control_url() == f"http://127.0.0.1:{port(listeners.control)}"
    assert not any(reuses_port(s) for s in [*listeners.imds, listeners.control])
    listeners.close()
    assert all(can_bind(p) for p in listeners.vm_ports)


def test_without_per_vm_ports_only_the_endpoint_and_control_are_bound(
    tmp_path: Path, opened: list[Listeners]
) -> None:
    config = config_with_vm_ports(tmp_path, free_ports(3), per_vm_ports=False,
                                  imds_bind=("127.0.0.1:0", "127.0.0.1:0"),
                                  control_bind="127.0.0.1:0")  # fmt: skip
    listeners = bind_listeners(config, prepare(config).topology)
    opened.append(listeners)
    assert len(listeners.imds) == 2 and listeners.vm_ports == {}


def test_a_vm_port_that_a_listener_uses_is_refused_and_nothing_stays_bound(
    tmp_path: Path,
) -> None:
    base = free_ports(5)  # the VMs want base+2..base+4; the control API takes base+3
    config = config_with_vm_ports(tmp_path, base + 2, imds_bind=(f"127.0.0.1:{base}",),
                                  control_bind=f"127.0.0.1:{base + 3}")  # fmt: skip
    topology = prepare(config).topology
    wanting = next(name for name, vm in topology.vms.items() if vm.port == base + 3)
    with pytest.raises(OSError, match=f"VM '{wanting}' wants port {base + 3}, which a listener"):
        bind_listeners(config, topology)
    assert all(can_bind(p) for p in range(base, base + 5))


def test_a_taken_port_is_a_clear_error_and_nothing_stays_bound(tmp_path: Path) -> None:
    base = free_ports(5)
    config = config_with_vm_ports(tmp_path, base + 2, imds_bind=(f"127.0.0.1:{base}",),
                                  control_bind=f"127.0.0.1:{base + 1}")  # fmt: skip
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", base + 1))
        taken.listen()
        with pytest.raises(OSError, match=f"cannot listen on 127.0.0.1:{base + 1}"):
            bind_listeners(config, prepare(config).topology)
    assert all(can_bind(p) for p in range(base, base + 5))


def test_workers_share_the_public_ports_and_each_has_its_own_control_port(
    tmp_path: Path, opened: list[Listeners]
) -> None:
    base = free_ports(2)
    config = ServeConfig(store="postgresql://postgres@127.0.0.1/fleet", workers=2,
                         imds_bind=(f"127.0.0.1:{base}",), control_bind=f"127.0.0.1:{base + 1}",
                         per_vm_ports=False)  # fmt: skip
    topology = prepare(ServeConfig(db=str(tmp_path / "none.db"))).topology  # the demo fleet
    first, second = bind_listeners(config, topology), bind_listeners(config, topology)
    opened += [first, second]
    for listeners in (first, second):
        assert [port(s) for s in listeners.imds] == [base]
        assert port(listeners.control) == base + 1
        assert all(reuses_port(s) for s in [*listeners.imds, listeners.control])
        private = listeners.private_control
        assert private is not None and not reuses_port(private)
        assert listeners.control_sockets() == [listeners.control, private]
        assert listeners.control_url() == f"http://127.0.0.1:{port(private)}"
    assert first.control_url() != second.control_url()


def test_the_banner_says_where_everything_listens(tmp_path: Path, opened: list[Listeners]) -> None:
    base = free_ports(3)
    config = config_with_vm_ports(tmp_path, base, imds_bind=("127.0.0.1:0",),
                                  control_bind="127.0.0.1:0", clock="virtual",
                                  time_scale=60)  # fmt: skip
    runtime = build_runtime(config, clock=Clock.virtual(start=1_700_000_000), threaded=False)
    try:
        listeners = bind_listeners(runtime.config, runtime.topology)
        opened.append(listeners)
        lines = list(banner(runtime, listeners))
    finally:
        runtime.close()
    endpoint = f"127.0.0.1:{port(listeners.imds[0])}"
    control = f"127.0.0.1:{port(listeners.control)}"
    default = runtime.topology.default_vm
    assert lines[0] == f"forewarn: metadata endpoint on http://{endpoint}"
    also = {f"forewarn:   also http://127.0.0.1:{p} (VM {name})"
            for p, name in listeners.vm_ports.items()}  # fmt: skip
    assert set(lines[1:4]) == also
    assert lines[4] == f"forewarn: control API on http://{control} (OpenAPI: /openapi.json)"
    assert lines[5] == (
        f"forewarn: 3 VMs in 2 scopes; clock virtual, time scale 60; db {tmp_path / 'x.db'}"
    )
    assert lines[6].startswith(f"forewarn: a plain request from 127.0.0.1 is VM '{default}'")
    assert f"'http://{endpoint}/metadata/scheduledevents?api-version=2020-07-01'" in lines[7]
    other = next(vm for name, vm in runtime.topology.vms.items() if name != default)
    assert f"as VM {other.name!r}:  curl -s --interface {other.address} " in lines[8]

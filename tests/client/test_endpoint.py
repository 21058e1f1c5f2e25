"""Finding the endpoint: explicit URL > $FOREWARN_IMDS_URL > $SCHEDULEDEVENTSIP > default,
and DHCP option 245 from dhclient and systemd-networkd lease files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from forewarn.client import (
    DEFAULT_ENDPOINT,
    InvalidEndpoint,
    ScheduledEventsClient,
    discover,
    option_245,
    resolve_endpoint,
)
from tests.support.serverproc import ServerProcess

DHCLIENT_LEASE = """\
lease {
  interface "eth0";
  fixed-address 10.0.0.4;
  option subnet-mask 255.255.255.0;
  option routers 10.0.0.1;
  option dhcp-lease-time 4294967295;
  option dhcp-message-type 5;
  option domain-name-servers 168.63.129.16;
  option dhcp-server-identifier 168.63.129.16;
  option unknown-245 a9:fe:a9:fe;
  option domain-name "contoso.internal.cloudapp.net";
  renew 0 2136/02/07 09:56:03;
  rebind 0 2136/02/07 09:56:03;
  expire 0 2136/02/07 09:56:03;
}
"""
# dhclient writes each renewal below the last: the newest lease is the last one.
DHCLIENT_TWO_LEASES = DHCLIENT_LEASE + DHCLIENT_LEASE.replace("a9:fe:a9:fe", "a:0:0:5")
# A printable value is written as a string with octal escapes for the other bytes.
DHCLIENT_STRING = 'lease {\n  option unknown-245 "\\012\\000\\000\\006";\n}\n'
NETWORKD_LEASE = """\
# This is private data. Do not parse.
ADDRESS=10.1.0.4
NETMASK=255.255.255.0
ROUTER=10.1.0.1
SERVER_ADDRESS=168.63.129.16
OPTION_245=A9FEA9FE
"""
NO_OPTION = 'lease {\n  interface "eth0";\n  fixed-address 10.0.0.4;\n}\n'


def test_resolution_order() -> None:
    env = {"FOREWARN_IMDS_URL": "http://127.0.0.1:8169/", "SCHEDULEDEVENTSIP": "10.0.0.5"}
    assert resolve_endpoint("http://explicit:81", environ=env) == "http://explicit:81"
    assert resolve_endpoint(environ=env) == "http://127.0.0.1:8169"
    assert resolve_endpoint(environ={"SCHEDULEDEVENTSIP": "10.0.0.5"}) == "http://10.0.0.5"
    assert resolve_endpoint(environ={"SCHEDULEDEVENTSIP": " ", "FOREWARN_IMDS_URL": ""}) == (
        DEFAULT_ENDPOINT
    )
    assert resolve_endpoint(environ={}) == "http://169.254.169.254"


@pytest.mark.parametrize(
    ("url", "environ", "fragment"),
    [
        ("ftp://host", {}, "must be an http:// URL"),
        ("   ", {}, "endpoint URL is empty"),
        (None, {"FOREWARN_IMDS_URL": "http://[::1"}, "$FOREWARN_IMDS_URL"),
        (None, {"SCHEDULEDEVENTSIP": "gopher://x"}, "$SCHEDULEDEVENTSIP"),
    ],
)
def test_bad_endpoints_are_named(url: str | None, environ: dict[str, str], fragment: str) -> None:
    with pytest.raises(InvalidEndpoint) as caught:
        resolve_endpoint(url, environ=environ)
    assert fragment in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_client_reads_the_environment(
    served: ServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCHEDULEDEVENTSIP", "192.0.2.1")  # outranked by the next one
    monkeypatch.setenv("FOREWARN_IMDS_URL", served.imds_url)
    with ScheduledEventsClient() as client:
        assert client.url == served.imds_url
        assert client.get().incarnation == 1
    monkeypatch.delenv("FOREWARN_IMDS_URL")
    monkeypatch.setenv("SCHEDULEDEVENTSIP", served.imds_url.removeprefix("http://"))
    with ScheduledEventsClient() as client:  # host:port in the legacy variable works too
        assert client.get().incarnation == 1


@pytest.mark.parametrize(
    ("text", "address"),
    [
        (DHCLIENT_LEASE, "169.254.169.254"),
        (DHCLIENT_TWO_LEASES, "10.0.0.5"),
        (DHCLIENT_STRING, "10.0.0.6"),
        (NETWORKD_LEASE, "169.254.169.254"),
        (NETWORKD_LEASE.replace("A9FEA9FE", "a9:fe:a9:fe"), "169.254.169.254"),
        (NO_OPTION, None),
        ("option unknown-245 a9:fe;", None),  # not an IPv4 address: ignored
        ("OPTION_245=ZZ", None),
    ],
)
def test_option_245(text: str, address: str | None) -> None:
    assert option_245(text) == address


def _write(path: Path, text: str, mtime: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.utime(path, (mtime, mtime))
    return path


def test_discover_reads_lease_files(tmp_path: Path) -> None:
    old = _write(tmp_path / "dhcp/dhclient.eth0.leases", DHCLIENT_LEASE, 1_000)
    new = _write(tmp_path / "netif/leases/2", NETWORKD_LEASE.replace("A9FEA9FE", "0A000007"),
                 2_000)  # fmt: skip
    plain = _write(tmp_path / "netif/leases/3", NO_OPTION, 3_000)
    missing = tmp_path / "nowhere.leases"
    found = discover([old, new, plain, missing], environ={})
    assert (found.url, found.source, found.lease_file) == (
        "http://10.0.0.7",
        "DHCP option 245",
        new,
    )
    assert discover([old], environ={}).url == "http://169.254.169.254"
    assert discover([plain, missing], environ={}).source == "default"


def test_variables_outrank_leases(tmp_path: Path) -> None:
    lease = _write(tmp_path / "l", DHCLIENT_LEASE, 1_000)
    found = discover([lease], environ={"SCHEDULEDEVENTSIP": "10.9.9.9"})
    assert (found.url, found.source, found.lease_file) == ("http://10.9.9.9", "$SCHEDULEDEVENTSIP",
                                                           None)  # fmt: skip

"""Test hosts with their own addresses on one machine: Linux network namespaces on a bridge.

:func:`test_network` makes a bridge in the calling (root) namespace, which is the *driver*
host, and one namespace per other host, each joined to the bridge by a veth pair, on a private
test subnet that exists only inside this machine (nothing outside it is ever addressed). A
host runs commands through :meth:`Host.run` (``ip netns exec``). Links
can be cut and healed (:meth:`Host.cut`, :meth:`Host.heal`) for partition tests, and a host can
be cut off the driver alone (:meth:`Host.cut_from_driver`: blackhole routes on both sides) while
it still reaches every other host.

Lifecycle: everything is named with a per-run prefix and torn down when the context exits,
also after a failure; :func:`sweep` removes what a killed run left behind (names with the
``ut<pid>-`` prefix whose process is gone). Needs root and iproute2 (CI runs as root);
:func:`unavailable` says why not, for a skip.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

#: The test subnet's first three octets: addresses are SUBNET.1 (driver), SUBNET.2, ...
SUBNET = "10.231.77"
PREFIX = "ut"


@functools.cache
def unavailable() -> str | None:
    """Why test hosts cannot be made here, or None."""
    if shutil.which("ip") is None:
        return "iproute2 ('ip') is not installed"
    if os.geteuid() != 0:
        return "network namespaces need root"
    probe = f"{PREFIX}{os.getpid()}-probe"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"ip netns add failed: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {result.stderr.strip()}")
    return result


@dataclass(frozen=True)
class Host:
    """One test host: a network namespace with one address on the test subnet."""

    name: str
    address: str
    veth: str  # the host's end of the veth pair, inside the bridge's namespace

    def command(self, argv: Sequence[str]) -> list[str]:
        return ["ip", "netns", "exec", self.name, *argv]

    def run(self, argv: Sequence[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` on this host and wait; its output as text."""
        return subprocess.run(self.command(argv), capture_output=True, text=True, timeout=timeout)

    def cut(self) -> None:
        """Take the host's link down: nothing reaches it and it reaches nothing."""
        _ip("link", "set", self.veth, "down")

    def heal(self) -> None:
        _ip("link", "set", self.veth, "up")

    def cut_from_driver(self, driver_address: str) -> None:
        """Drop every packet between this host and the driver (this namespace), both ways;
        the other hosts of the bridge still reach it, and it them."""
        _ip("-n", self.name, "route", "add", "blackhole", f"{driver_address}/32")
        _ip("route", "add", "blackhole", f"{self.address}/32")

    def heal_from_driver(self, driver_address: str) -> None:
        _ip("route", "del", "blackhole", f"{self.address}/32", check=False)
        _ip("-n", self.name, "route", "del", "blackhole", f"{driver_address}/32", check=False)


@dataclass(frozen=True)
class Network:
    driver_address: str
    hosts: tuple[Host, ...]
    bridge: str


@contextmanager
def test_network(hosts: int = 1) -> Iterator[Network]:
    """A bridge with the driver (this namespace) at SUBNET.1 and ``hosts`` namespaces at
    SUBNET.2, SUBNET.3, ...; torn down on exit."""
    sweep()
    for route in _ip("route", "show", "type", "blackhole", check=False).stdout.splitlines():
        if route.split()[1].startswith(f"{SUBNET}."):  # a killed run's cut (cut_from_driver)
            _ip("route", "del", *route.split(), check=False)
    tag = f"{PREFIX}{os.getpid()}-"
    bridge = f"{tag}br"
    made: list[Host] = []
    _ip("link", "add", bridge, "type", "bridge")
    try:
        _ip("addr", "add", f"{SUBNET}.1/24", "dev", bridge)
        _ip("link", "set", bridge, "up")
        for i in range(hosts):
            name, outer, inner = f"{tag}h{i}", f"{tag}v{i}", f"{tag}p{i}"
            host = Host(name, f"{SUBNET}.{i + 2}", outer)
            _ip("netns", "add", name)
            made.append(host)
            _ip("link", "add", outer, "type", "veth", "peer", "name", inner)
            _ip("link", "set", outer, "master", bridge)
            _ip("link", "set", outer, "up")
            _ip("link", "set", inner, "netns", name)
            _ip("-n", name, "addr", "add", f"{host.address}/24", "dev", inner)
            _ip("-n", name, "link", "set", inner, "up")
            _ip("-n", name, "link", "set", "lo", "up")
        yield Network(f"{SUBNET}.1", tuple(made), bridge)
    finally:
        for host in made:
            _ip("route", "del", "blackhole", f"{host.address}/32", check=False)
            _ip("link", "del", host.veth, check=False)
            _ip("netns", "del", host.name, check=False)
        _ip("link", "del", bridge, check=False)


def sweep() -> None:
    """Remove namespaces and links of earlier runs whose process is gone."""
    listed = _ip("netns", "list", check=False).stdout.split()
    links = [line.split(":")[1].strip().split("@")[0]
             for line in _ip("-o", "link", "show", check=False).stdout.splitlines()]  # fmt: skip
    for name in sorted({*listed, *links}):
        owner = _OWNED.fullmatch(name)
        if owner is None or os.path.exists(f"/proc/{owner.group(1)}"):
            continue
        if name in listed:
            _ip("netns", "del", name, check=False)
        else:
            _ip("link", "del", name, check=False)


_OWNED = re.compile(rf"{PREFIX}(\d+)-[a-z]+\d*")

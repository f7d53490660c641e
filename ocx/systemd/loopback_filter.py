"""What a run with network may reach on this host: its egress program (docs/security.md, 'The loopback filter').

A run with `network: true` shares the host's network namespace, so every
service listening on the host (on 127.0.0.1, on ::1, or on any address of
the host's own, all of which the kernel delivers over the loopback device)
would be one connect away. IPAddressDeny= filters addresses, not ports, and
the Fossil server the run must reach lives on 127.0.0.1 beside them. So each
such run's unit names this cgroup egress program (IPEgressFilterPath=); for
a packet leaving on the loopback device it allows only

- TCP to the node's Fossil server (its URL's address and port),
- DNS (UDP and TCP port 53) to a resolver of /etc/resolv.conf that is
  itself on this host (systemd-resolved's 127.0.0.53, say), and the ports
  root listens on at such a resolver's own address (Docker's 127.0.0.11,
  reached through a DNAT rule the hook sees after: a host in a container,
  as a build host may be, D36),
- TCP or UDP to a socket of the run's own unit (the kernel's socket lookup
  for the packet, and that socket's cgroup compared with the sender's): a
  test suite's own server on localhost still works,

and drops the rest. A packet that leaves on any other device passes here;
link-local addresses (cloud metadata) are IPAddressDeny='s. Non-first IPv4
fragments and IPv6 extension headers are dropped (no ports to judge by).

`program()` is pure; `ensure()` loads and pins it, named by its own hash so
a changed allowance (a new port, a new resolver) is a new pin and units
that already run keep the program they started with.
"""
from __future__ import annotations

import glob
import hashlib
import ipaddress
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlparse

from . import bpf
from .bpf import FP, JEQ, JLT, JNE, Assembler, B, H, W

TCP, UDP = 6, 17
DNS_PORT = 53
LOOPBACK_IFINDEX = 1  # the kernel registers lo first in every network namespace
ETH_P_IP, ETH_P_IPV6 = 0x0800, 0x86DD
# __sk_buff fields (linux/bpf.h)
SKB_PROTOCOL, SKB_IFINDEX = 16, 40
# Stack: the IP header (40 bytes, IPv4 uses 20), the L4 ports, the lookup tuple.
HEADER, PORTS, TUPLE = -40, -44, -80
CTX, L4, SIZE = 6, 8, 9  # callee-saved registers: the skb, the L4 protocol, the tuple's size


@dataclass(frozen=True)
class Allowance:
    """One (protocol, address, port) a run may send to over loopback."""

    protocol: int
    address: str
    port: int

    @property
    def ip(self) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
        return ipaddress.ip_address(self.address)


def server_allowances(url: str) -> list[Allowance]:
    """The node's Fossil server, from its URL (a name is resolved here, once)."""
    parsed = urlparse(url)
    host, port = parsed.hostname or "127.0.0.1", parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        addresses = [str(ipaddress.ip_address(host))]
    except ValueError:
        addresses = sorted({str(info[4][0]) for info in socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)})
    return [Allowance(TCP, address, port) for address in addresses]


def resolver_allowances(resolv_conf: str) -> list[Allowance]:
    """DNS to each `nameserver` of resolv.conf that is a loopback address."""
    found = []
    for line in resolv_conf.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] == "nameserver":
            try:
                address = ipaddress.ip_address(words[1].split("%")[0])
            except ValueError:
                continue
            if address.is_loopback:
                found += [Allowance(UDP, str(address), DNS_PORT), Allowance(TCP, str(address), DNS_PORT)]
    return found


def _proc_net_address(text: str) -> str:
    """/proc/net/{udp,tcp}{,6}'s address column (the kernel's words, host order) as an address."""
    raw = bytes.fromhex(text)
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(words))


def redirected_resolver_allowances(resolvers: list[Allowance], sockets: dict[int, str]) -> list[Allowance]:
    """A loopback resolver on an address of its own (not 127.0.0.1 or ::1) may be reached through
    NAT: Docker's embedded one, 127.0.0.11:53, is DNATed to ports of its choosing, and the egress
    hook sees the packet after NAT. So each socket root listens on at exactly that address is
    allowed too. SOCKETS: protocol -> the text of /proc/net's tables for it (udp, tcp, udp6, tcp6)."""
    own = {x.address for x in resolvers if x.address not in ("127.0.0.1", "::1")}
    found = []
    for protocol, table in sockets.items():
        listening = "07" if protocol == UDP else "0A"  # an unconnected UDP socket; TCP's LISTEN
        for line in table.splitlines():
            words = line.split()  # a table's heading starts "sl"; udp and udp6 may be given as one text
            if len(words) < 8 or words[0] == "sl" or words[3] != listening or words[7] != "0":
                continue
            try:
                address_hex, port_hex = words[1].split(":")
                address, port = _proc_net_address(address_hex), int(port_hex, 16)
            except ValueError:
                continue
            if address in own and port != DNS_PORT:
                found.append(Allowance(protocol, address, port))
    return sorted(set(found), key=lambda x: (x.protocol, x.address, x.port))


def _raw(data: bytes) -> int:
    """How a 32- or 16-bit load from the stack sees these network-order bytes (little-endian host)."""
    return int.from_bytes(data, "little")


def program(allowed: list[Allowance]) -> bytes:
    """The cgroup-skb egress program: 1 lets a packet pass, 0 drops it."""
    a = Assembler()
    a.mov_reg(CTX, 1)
    a.load(W, 2, CTX, SKB_IFINDEX)
    a.jump32(JNE, 2, LOOPBACK_IFINDEX, "pass")  # not for this host: IPAddressDeny's, not ours
    a.load(W, 7, CTX, SKB_PROTOCOL)
    a.jump32(JEQ, 7, _raw(ETH_P_IP.to_bytes(2, "big")), "ipv4")
    a.jump32(JEQ, 7, _raw(ETH_P_IPV6.to_bytes(2, "big")), "ipv6")
    a.goto("drop")
    _ipv4(a, [x for x in allowed if x.ip.version == 4])
    _ipv6(a, [x for x in allowed if x.ip.version == 6])
    _own_socket(a)
    a.label("drop")
    a.mov(0, 0)
    a.exit()
    a.label("pass")
    a.mov(0, 1)
    a.exit()
    return a.assemble()


def _load_bytes(a: Assembler, offset: int, to: int, length: int, offset_reg: int | None = None) -> None:
    """bpf_skb_load_bytes(skb, offset (or the register OFFSET_REG), fp+to, length); a failure drops."""
    a.mov_reg(1, CTX)
    if offset_reg is None:
        a.mov(2, offset)
    else:
        a.mov_reg(2, offset_reg)
    a.mov_reg(3, FP)
    a.add(3, to)
    a.mov(4, length)
    a.call(bpf.SKB_LOAD_BYTES)
    a.jump(JNE, 0, 0, "drop")


def _copy(a: Assembler, source: int, target: int, words: int) -> None:
    for i in range(words):
        a.load(W, 2, FP, source + 4 * i)
        a.store(W, FP, target + 4 * i, 2)


def _ipv4(a: Assembler, allowed: list[Allowance]) -> None:
    a.label("ipv4")
    _load_bytes(a, 0, HEADER, 20)
    a.load(B, 2, FP, HEADER + 6)   # flags and fragment offset: a later fragment has no ports
    a.and_(2, 0x1F)
    a.jump(JNE, 2, 0, "drop")
    a.load(B, 2, FP, HEADER + 7)
    a.jump(JNE, 2, 0, "drop")
    a.load(B, L4, FP, HEADER + 9)
    a.load(B, SIZE, FP, HEADER)    # IHL, in 32-bit words
    a.and_(SIZE, 0x0F)
    a.lsh(SIZE, 2)
    a.jump(JLT, SIZE, 20, "drop")
    _load_bytes(a, 0, PORTS, 4, offset_reg=SIZE)
    a.load(W, 2, FP, HEADER + 16)  # destination address
    a.load(H, 3, FP, PORTS + 2)    # destination port
    for n, allow in enumerate(allowed):
        skip = f"ipv4-not-{n}"
        a.jump32(JNE, L4, allow.protocol, skip)
        a.jump32(JNE, 2, _raw(allow.ip.packed), skip)
        a.jump32(JEQ, 3, _raw(allow.port.to_bytes(2, "big")), "pass")
        a.label(skip)
    _copy(a, HEADER + 12, TUPLE, 2)  # source and destination addresses
    _copy(a, PORTS, TUPLE + 8, 1)    # source and destination ports
    a.mov(SIZE, 12)
    a.goto("lookup")


def _ipv6(a: Assembler, allowed: list[Allowance]) -> None:
    a.label("ipv6")
    _load_bytes(a, 0, HEADER, 40)
    a.load(B, L4, FP, HEADER + 6)  # next header: TCP or UDP, else dropped at the lookup
    _load_bytes(a, 40, PORTS, 4)
    a.load(H, 3, FP, PORTS + 2)
    for n, allow in enumerate(allowed):
        skip = f"ipv6-not-{n}"
        a.jump32(JNE, L4, allow.protocol, skip)
        for i in range(4):
            a.load(W, 2, FP, HEADER + 24 + 4 * i)
            a.jump32(JNE, 2, _raw(allow.ip.packed[4 * i:4 * i + 4]), skip)
        a.jump32(JEQ, 3, _raw(allow.port.to_bytes(2, "big")), "pass")
        a.label(skip)
    _copy(a, HEADER + 8, TUPLE, 8)   # source and destination addresses
    _copy(a, PORTS, TUPLE + 32, 1)
    a.mov(SIZE, 36)


def _own_socket(a: Assembler) -> None:
    """Pass when the socket the packet is for belongs to the sender's own cgroup (its unit)."""
    a.label("lookup")
    a.mov_reg(1, CTX)
    a.mov_reg(2, FP)
    a.add(2, TUPLE)
    a.mov_reg(3, SIZE)
    a.mov(4, -1)  # BPF_F_CURRENT_NETNS
    a.mov(5, 0)
    a.jump32(JEQ, L4, TCP, "tcp")
    a.jump32(JEQ, L4, UDP, "udp")
    a.goto("drop")
    a.label("tcp")
    a.call(bpf.SK_LOOKUP_TCP)
    a.goto("found")
    a.label("udp")
    a.call(bpf.SK_LOOKUP_UDP)
    a.label("found")
    a.jump(JEQ, 0, 0, "drop")
    a.mov_reg(7, 0)
    a.mov_reg(1, 0)
    a.call(bpf.SK_CGROUP_ID)
    a.mov_reg(L4, 0)
    a.mov_reg(1, 7)
    a.call(bpf.SK_RELEASE)
    a.mov_reg(1, CTX)
    a.call(bpf.SKB_CGROUP_ID)
    a.jump(JEQ, 0, 0, "drop")
    a.jump_reg(JEQ, 0, L4, "pass")
    a.goto("drop")


def pin_name(node: str, code: bytes) -> str:
    """bpffs names take no dots; the hash makes a changed program a new pin."""
    safe = "".join(c if c.isascii() and c.isalnum() or c in "-_" else "_" for c in node)
    return f"{bpf.BPFFS}/ocx-{safe}-egress-{hashlib.sha256(code).hexdigest()[:12]}"


def allowances(url: str, resolv_conf: str = "/etc/resolv.conf") -> list[Allowance]:
    try:
        with open(resolv_conf) as f:
            text = f.read(65536)
    except OSError:
        text = ""
    resolvers = resolver_allowances(text)
    sockets: dict[int, str] = {}
    for protocol, names in ((UDP, ("udp", "udp6")), (TCP, ("tcp", "tcp6"))):
        for name in names:
            try:
                with open(f"/proc/net/{name}") as f:
                    sockets[protocol] = sockets.get(protocol, "") + f.read(1 << 20)
            except OSError:
                pass
    return server_allowances(url) + resolvers + redirected_resolver_allowances(resolvers, sockets)


FRESH_SECONDS = 1.0  # how long a program read from the host's resolvers and sockets is used again
_ENSURED: dict[tuple[str, str], tuple[float, str]] = {}  # (node, url) -> (when, its pin)


def ensure(node: str, url: str, *, read: Callable[[str], list[Allowance]] = allowances,
           clock: Callable[[], float] = time.monotonic) -> str:
    """The pinned program for node NODE's runs, loaded now if it is not yet; its path.

    As root (the node's service). Raises OSError (BpfError) when the kernel
    refuses: the run is then not started (systemd 252 fails a unit whose
    IPEgressFilterPath it cannot open, Result `resources`: closed, not open).
    Within FRESH_SECONDS of the last READ of the host's resolvers and sockets
    (`allowances`), by CLOCK, the same pin serves while it is there: reading
    /proc/net's socket tables was the node's largest cost of a session's start
    in a burst (docs/node.md, 'Measured': 15 % of its CPU, a hundred sessions at once)."""
    recent = _ENSURED.get((node, url))
    if recent is not None and clock() - recent[0] < FRESH_SECONDS and bpf.pinned(recent[1]):
        return recent[1]
    code = program(read(url))
    path = pin_name(node, code)
    bpf.mount_bpffs()
    if not bpf.pinned(path):
        fd = bpf.load(code, "ocx_egress")
        try:
            try:
                bpf.pin(fd, path)
            except bpf.BpfError as error:
                if error.errno != 17 or not bpf.pinned(path):  # EEXIST: another pass pinned it first
                    raise
        finally:
            os.close(fd)
    prefix = pin_name(node, b"").rsplit("-", 1)[0] + "-"
    for stale in glob.glob(glob.escape(prefix) + "*"):
        rest = stale[len(prefix):]  # this node's pins only: a hash, not another node's name
        if stale != path and len(rest) == 12 and all(c in "0123456789abcdef" for c in rest):
            try:
                os.unlink(stale)  # units that started with it keep their own attached copy
            except OSError:
                pass
    _ENSURED[(node, url)] = (clock(), path)
    return path

"""The pure parts of the run's sandbox: hardening and timer properties, the
loopback program's inputs (docs/security.md, 'The unit's sandbox'). No bus, no systemd, no kernel."""

from __future__ import annotations

import errno
import socket

import pytest
from dbus_next import Variant
from hypothesis import given, strategies as st

from ocx.node_service.sandbox import METADATA, run_hardening
from ocx.systemd import timers
from ocx.systemd.bus import variants
from ocx.systemd.hardening import Hardening, properties
from ocx.systemd.loopback_filter import (Allowance, TCP, UDP, pin_name, program, redirected_resolver_allowances,
                                         resolver_allowances, server_allowances)
from ocx.systemd.units import TransientService, UnitError
from ocx.systemd.units import properties as service_properties

NAME = "ocx-0123456789ab-ba9876543210.service"
PIN = "/sys/fs/bpf/ocx-n-egress-0123456789ab"


def marshals(props: list) -> None:
    for _, sig, value in props:
        Variant(sig, value)
    body, _ = variants(props)
    Variant("a(sv)", body)


def as_dict(props: list) -> dict:
    return {name: (sig, value) for name, sig, value in props if name != "SystemCallFilter"}


def test_nothing_named_adds_nothing():
    assert properties(Hardening()) == []


def test_a_runs_sandbox_without_network():
    p = properties(run_hardening(network=False, egress_filter=None))
    marshals(p)
    d = as_dict(p)
    assert d["CapabilityBoundingSet"] == ("t", 0) and d["AmbientCapabilities"] == ("t", 0)
    assert d["RestrictNamespaces"] == ("t", 0)                  # the mask of namespaces allowed: none
    assert d["RestrictAddressFamilies"] == ("(bas)", [True, ["AF_UNIX"]])
    assert d["SystemCallArchitectures"] == ("as", ["native"])
    assert d["SystemCallErrorNumber"] == ("i", errno.EPERM)
    assert d["ProtectProc"] == ("s", "invisible") and d["ProcSubset"] == ("s", "pid")
    assert d["UMask"] == ("u", 0o077) and d["KeyringMode"] == ("s", "private")
    assert d["DevicePolicy"] == ("s", "closed") and d["OOMScoreAdjust"] == ("i", 500)
    for flag in ("NoNewPrivileges", "PrivateDevices", "PrivateIPC", "ProtectKernelTunables",
                 "ProtectKernelModules", "ProtectKernelLogs", "ProtectControlGroups", "ProtectClock",
                 "ProtectHostname", "LockPersonality", "RestrictRealtime", "RestrictSUIDSGID", "RemoveIPC"):
        assert d[flag] == ("b", True), flag
    # A JIT needs writable executable memory, a user namespace shares root's inotify limits
    # (docs/security.md); a private network needs no address filter.
    for absent in ("MemoryDenyWriteExecute", "PrivateUsers", "IPAddressDeny", "IPAddressAllow", "IPEgressFilterPath"):
        assert absent not in d
    filters = [value for name, _, value in p if name == "SystemCallFilter"]
    assert filters == [[True, ["@system-service"]], [False, ["@privileged", "@resources"]]]


def test_a_run_with_network_gets_inet_metadata_denied_and_its_loopback_filter():
    d = as_dict(properties(run_hardening(network=True, egress_filter=PIN)))
    assert d["RestrictAddressFamilies"] == ("(bas)", [True, ["AF_UNIX", "AF_INET", "AF_INET6"]])
    assert d["IPAddressDeny"] == ("a(iayu)", [
        [socket.AF_INET, bytes([169, 254, 0, 0]), 16], [socket.AF_INET6, bytes([0xfe, 0x80]) + bytes(14), 10],
        [socket.AF_INET6, bytes.fromhex("fd000ec2000000000000000000000254"), 128],
        [socket.AF_INET, bytes([100, 100, 100, 200]), 32]])
    assert METADATA[:2] == ("169.254.0.0/16", "fe80::/10")
    assert d["IPEgressFilterPath"] == ("as", [PIN])


def test_a_run_with_network_never_goes_without_its_filter():
    with pytest.raises(ValueError, match="loopback filter"):
        run_hardening(network=True, egress_filter=None)


def test_the_system_call_filter_is_sent_twice_and_nothing_else_is():
    service = TransientService(name=NAME, argv=["/bin/true"], hardening=run_hardening(False, None))
    names = [name for name, _, _ in service_properties(service)]
    assert names.count("SystemCallFilter") == 2
    assert len(names) - 1 == len(set(names))
    with pytest.raises(UnitError, match="twice"):
        service_properties(TransientService(name=NAME, argv=["/bin/true"], hardening=Hardening(umask=0o77),
                                            extra=[("UMask", "u", 0o22)]))


def test_any_as_an_address_is_both_families():
    d = as_dict(properties(Hardening(ip_address_deny=["any"])))
    assert d["IPAddressDeny"][1] == [[socket.AF_INET, bytes(4), 0], [socket.AF_INET6, bytes(16), 0]]


@pytest.mark.parametrize("kw,field", [
    ({"protect_proc": "hidden"}, "protect_proc"),
    ({"proc_subset": "some"}, "proc_subset"),
    ({"keyring_mode": "open"}, "keyring_mode"),
    ({"device_policy": "open"}, "device_policy"),
    ({"restrict_address_families": ["AF_BLUETOOTH"]}, "restrict_address_families"),
    ({"system_call_deny": ["@privileged"]}, "system_call_deny"),
    ({"umask": 0o1000}, "umask"),
    ({"oom_score_adjust": 1001}, "oom_score_adjust"),
    ({"system_call_error": 100000}, "system_call_error"),
    ({"ip_address_deny": ["10.0.0.1/8"]}, "ip_address_deny"),
    ({"ip_address_allow": ["nowhere"]}, "ip_address_allow"),
    ({"ip_egress_filter_path": ["/tmp/prog"]}, "ip_egress_filter_path"),
])
def test_what_systemd_would_refuse_is_refused_naming_the_field(kw, field):
    with pytest.raises(UnitError, match=field):
        properties(Hardening(**kw))


@given(network=st.booleans(), oom=st.integers(-1000, 1000), umask=st.integers(0, 0o777),
       deny=st.lists(st.sampled_from(["127.0.0.0/8", "::1/128", "10.0.0.0/8", "any"]), max_size=3))
def test_any_valid_hardening_marshals(network, oom, umask, deny):
    base = run_hardening(network, PIN if network else None)
    fields = {**base.__dict__, "oom_score_adjust": oom, "umask": umask, "ip_address_deny": deny}
    marshals(properties(Hardening(**fields)))


# --- the cpu watch's timer ------------------------------------------------------

def test_a_timer_fires_once_soon_after_and_stops_with_its_run():
    t = timers.TransientTimer("ocx-a-b-cpu-1.timer", on_active_sec=2.5, accuracy_sec=0.2,
                              stop_propagated_from=["ocx-a-b.service"])
    p = dict((n, (s, v)) for n, s, v in timers.properties(t))
    marshals(timers.properties(t))
    assert p["OnActiveSec"] == ("t", 2_500_000) and p["AccuracyUSec"] == ("t", 200_000)
    assert p["RemainAfterElapse"] == ("b", False)
    assert p["StopPropagatedFrom"] == ("as", ["ocx-a-b.service"])
    assert t.service == "ocx-a-b-cpu-1.service"


@pytest.mark.parametrize("kw,field", [
    ({"name": "x.service"}, "name"), ({"name": "x.timer\n"}, "name"), ({"on_active_sec": 0}, "on_active_sec"),
    ({"accuracy_sec": -1}, "accuracy_sec"), ({"stop_propagated_from": ["nounit"]}, "stop_propagated_from")])
def test_a_timer_systemd_would_refuse_is_refused(kw, field):
    fields = {"name": "x.timer", "on_active_sec": 1.0, **kw}
    with pytest.raises(UnitError, match=field):
        timers.properties(timers.TransientTimer(**fields))


# --- the loopback program's inputs ---------------------------------------------------

def test_the_server_allowance_is_its_urls_address_and_port():
    assert server_allowances("http://127.0.0.1:8191") == [Allowance(TCP, "127.0.0.1", 8191)]
    assert server_allowances("http://[::1]:80/x") == [Allowance(TCP, "::1", 80)]
    assert server_allowances("http://127.0.0.1") == [Allowance(TCP, "127.0.0.1", 80)]


def test_only_loopback_resolvers_are_allowed_each_on_udp_and_tcp():
    conf = "# comment\nnameserver 10.255.255.53\nnameserver 127.0.0.53\nnameserver ::1\nnameserver nonsense\nsearch x\n"
    assert resolver_allowances(conf) == [Allowance(UDP, "127.0.0.53", 53), Allowance(TCP, "127.0.0.53", 53),
                                         Allowance(UDP, "::1", 53), Allowance(TCP, "::1", 53)]
    assert resolver_allowances("nameserver 8.8.8.8\n") == []


def test_a_resolver_reached_through_nat_is_allowed_at_the_ports_root_listens_on_at_its_own_address():
    # /proc/net/udp and tcp of a Docker container on a network of its own (127.0.0.11's DNAT
    # targets, root's), with a run's socket on the same address and root's other services on 127.0.0.1.
    heading = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    udp = heading + (" 1: 0B00007F:A66E 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 1\n"
                     " 2: 0B00007F:1F90 00000000:0000 07 00000000:00000000 00:00000000 00000000  1001        0 2\n"
                     " 3: 0100007F:0035 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 3\n")
    tcp = heading + (" 0: 0B00007F:95C3 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4\n"
                     " 1: 0B00007F:95C4 0100007F:1234 01 00000000:00000000 00:00000000 00000000     0        0 5\n"
                     " 2: 0100007F:0277 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 6\n"
                     " 3: 00000000000000000000000001000000:0277 00000000000000000000000000000000:0000 0A "
                     "00000000:00000000 00:00000000 00000000     0        0 7\n")
    docker = resolver_allowances("nameserver 127.0.0.11\n")
    assert redirected_resolver_allowances(docker, {UDP: udp, TCP: tcp}) == [
        Allowance(TCP, "127.0.0.11", 0x95C3), Allowance(UDP, "127.0.0.11", 0xA66E)]
    # A resolver on 127.0.0.1 or ::1 shares them with every other service: port 53 only.
    shared = resolver_allowances("nameserver 127.0.0.1\nnameserver ::1\n")
    assert redirected_resolver_allowances(shared, {UDP: udp, TCP: tcp}) == []
    assert redirected_resolver_allowances(resolver_allowances("nameserver 8.8.8.8\n"), {UDP: udp, TCP: tcp}) == []


def test_the_program_is_whole_instructions_and_its_pin_changes_with_it():
    one = program([Allowance(TCP, "127.0.0.1", 8191)])
    other = program([Allowance(TCP, "127.0.0.1", 8192)])
    assert len(one) % 8 == 0 and len(one) == len(other) and one != other
    assert program([Allowance(TCP, "127.0.0.1", 8191)]) == one  # deterministic: the pin is named by it
    assert pin_name("node.one", one) != pin_name("node.one", other)
    assert "." not in pin_name("node.one", one).removeprefix("/sys/fs/bpf/")  # bpffs takes no dots

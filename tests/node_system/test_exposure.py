"""The unit's kernel-facing sandbox (docs/security.md, 'Measured'): systemd's own score of a live
run unit, and what a run can reach and see, tried from inside it.

`systemd-analyze security` is deterministic for a given unit, so the
figures are limits, not timings. The reach tests attack from inside a real
run: services the host runs on 127.0.0.1, on ::1 and on every address, a
link-local "cloud metadata" server in a network namespace of its own (so
only the unit's address filter stands between them), another run's
processes; a connect that is dropped times out after 2 s (session_program).
"""
from __future__ import annotations

import json
import re
import socket
import subprocess

import pytest

from ocx.protocol import Outcome

from .harness import journal, systemctl, wait_for

pytestmark = pytest.mark.systemd

LIMITS = {False: 2.0, True: 3.0}  # the highest exposure allowed, without and with network
METADATA = "169.254.169.254"


def exposure(unit: str) -> tuple[float, str]:
    table = subprocess.run(["systemd-analyze", "security", "--no-pager", unit], capture_output=True,
                           text=True, timeout=60).stdout
    found = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", table)
    assert found, table
    return float(found.group(1)), table


@pytest.mark.parametrize("network", [False, True], ids=["no-network", "network"])
def test_a_session_unit_scores_no_more_exposure_than_its_limit(node, network):
    record = node.post(node.record(objective="sleep 120", sandbox={"network": network, "read_only": [],
                                                                    "read_write": []}))
    unit = node.unit(record)
    try:
        wait_for(lambda: systemctl("is-active", unit).strip() == "active", 60, what="the run")
        score, table = exposure(unit)
        print(f"\n$ systemd-analyze security {unit}    # network: {str(network).lower()}\n{table}")
        assert score <= LIMITS[network], table
    finally:
        node.stop(record)
    node.response(record)


def _listen(family: int, address: str) -> socket.socket:
    server = socket.socket(family)
    server.bind((address, 0))
    server.listen()  # the kernel answers a connect from the backlog: no accept needed
    return server


def _reached(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def metadata():
    """A metadata-like HTTP server at 169.254.169.254 in a network namespace of its own,
    reached over a veth pair: not on loopback, so only IPAddressDeny can keep a run from it."""
    commands = [["ip", "netns", "add", "metadata"],
                ["ip", "link", "add", "md-host", "type", "veth", "peer", "name", "md-ns", "netns", "metadata"],
                ["ip", "addr", "add", "169.254.0.1/16", "dev", "md-host"], ["ip", "link", "set", "md-host", "up"],
                ["ip", "netns", "exec", "metadata", "ip", "addr", "add", f"{METADATA}/16", "dev", "md-ns"],
                ["ip", "netns", "exec", "metadata", "ip", "link", "set", "md-ns", "up"],
                ["ip", "netns", "exec", "metadata", "ip", "link", "set", "lo", "up"]]
    for command in commands:
        subprocess.run(command, check=True, capture_output=True, timeout=30)
    server = subprocess.Popen(["ip", "netns", "exec", "metadata", "python3", "-m", "http.server", "80", "--bind",
                               METADATA], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: _reached(METADATA, 80), 30, what="the metadata server, from outside any run")
        yield f"{METADATA}:80"
    finally:
        server.kill()
        server.wait()
        subprocess.run(["ip", "link", "del", "md-host"], capture_output=True, timeout=30)
        subprocess.run(["ip", "netns", "del", "metadata"], capture_output=True, timeout=30)


@pytest.fixture(scope="module")
def host_services(metadata):
    servers = {"loopback": _listen(socket.AF_INET, "127.0.0.1"), "loopback6": _listen(socket.AF_INET6, "::1"),
               "every_address": _listen(socket.AF_INET, "0.0.0.0")}
    host_address = socket.gethostbyname(socket.gethostname())  # the container's own eth0 address
    where = {"other_loopback": f"127.0.0.1:{servers['loopback'].getsockname()[1]}",
             "other_loopback6": f"[::1]:{servers['loopback6'].getsockname()[1]}",
             # A service on every address answers on 127.0.0.2 and on the host's own address too.
             "every_address_on_127.0.0.2": f"127.0.0.2:{servers['every_address'].getsockname()[1]}",
             "every_address_on_the_host_address": f"{host_address}:{servers['every_address'].getsockname()[1]}",
             "metadata": metadata}
    for name, host_port in where.items():  # each answers a process that is not a run
        host, _, port = host_port.rpartition(":")
        assert _reached(host.strip("[]"), int(port)), name
    yield where
    for server in servers.values():
        server.close()


def probe(node, runner: str, network: bool) -> tuple[str, dict]:
    """The run's unit, and what its program saw."""
    record = node.post(node.record(runner=runner, objective="probe", sandbox={"network": network, "read_only": [],
                                                                                "read_write": []}))
    assert node.response(record, timeout=120).outcome is Outcome.exited
    line = next(l for l in journal(node.unit(record)).splitlines() if l.startswith("probe "))
    return node.unit(record), json.loads(line.removeprefix("probe "))


@pytest.mark.parametrize("network", [True, False], ids=["network", "no-network"])
def test_from_inside_a_run_no_namespace_no_other_process_no_other_service(node, host_services, network):
    other = node.post(node.record(objective="sleep 60"))  # another run, whose processes must stay unseen
    wait_for(lambda: systemctl("is-active", node.unit(other)).strip() == "active", 60, what="the other run")
    other_pid = systemctl("show", node.unit(other), "-p", "MainPID", "--value").strip()
    node.runner_page(node.admin, name="exposed", env={"PROBE_SERVER": node.url.removeprefix("http://"),
                                                      "PROBE_REACH": json.dumps(host_services)})
    try:
        unit, seen = probe(node, "exposed", network)
    finally:
        node.stop(other)
    # No user namespace (RestrictNamespaces), where `unshare -Ur` made the run uid 0 before.
    assert seen["unshare"]["status"] != 0 and "Operation not permitted" in seen["unshare"]["error"], seen["unshare"]
    # Only its own unit's processes (ProtectProc=invisible): not PID 1, not the node, not the other run.
    assert seen["own_cgroup"] == f"/ocx.slice/{unit}"
    assert set(seen["processes"].values()) == {seen["own_cgroup"]}, seen["processes"]
    assert "1" not in seen["processes"] and other_pid not in seen["processes"]
    # Every service of the host's own and the metadata address: unreachable; the Fossil server: reached
    # where the run has network, as its clone and its tools need.
    assert seen["reaches"] == {name: False for name in host_services}, seen["reaches"]
    assert seen["reaches_server"] is network
    # What a test suite of its own needs: a server of the run's own on loopback, both families. Without
    # network a unit allows no IP socket at all (RestrictAddressFamilies=AF_UNIX, docs/security.md).
    refused = "[Errno 97] Address family not supported by protocol"
    assert seen["own_server"] == ({"ipv4": True, "ipv6": True} if network else {"ipv4": refused, "ipv6": refused})
    node.response(other)


def test_the_address_filter_is_the_units_own_not_the_hosts(node, host_services):
    """Control: the same connects from a unit that is not a run reach every service above."""
    done = subprocess.run(["systemd-run", "--wait", "--pipe", "--quiet", "-p", "DynamicUser=yes",
                           "/opt/ocx/venv/bin/python", "-c",
                           "import json, socket, sys\n"
                           "def reach(hp):\n"
                           "    h, _, p = hp.rpartition(':')\n"
                           "    try:\n"
                           "        socket.create_connection((h.strip('[]'), int(p)), timeout=2).close(); return True\n"
                           "    except OSError:\n"
                           "        return False\n"
                           f"print(json.dumps({{n: reach(w) for n, w in {host_services!r}.items()}}))"],
                          capture_output=True, text=True, timeout=120)
    assert json.loads(done.stdout) == {name: True for name in host_services}, done.stderr

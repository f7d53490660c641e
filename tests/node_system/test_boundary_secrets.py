"""The battery, docs/security.md's classes 3 and 5 (D41): no password where another process
can read it while runs prepare; a run's tool socket and the node's secrets
reachable by no other account and no other run; the tool service bounded."""
import hashlib
import json
import os
import re
import socket
import subprocess
import threading
import time
import urllib.parse

import pytest

from ocx.node.run_layout import RunHome, unit_stem
from ocx.node.record_dirs import RecordDir
from ocx.node.socket_served import short_path, socket_accepts, tool_socket_path
from ocx.run_steps.prepare import PASSWORD_FILE
from ocx.tool_service.tool_socket import CONNECTIONS, REQUEST_BYTES

from .battery import runner, session
from .harness import journal, systemctl, wait_for

pytestmark = pytest.mark.systemd

TOKEN = re.compile(rb"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])")


class ProcessScan:
    """Every process's cmdline and environ, read over and over by root until stopped."""

    def __init__(self):
        self.blobs: set[bytes] = set()
        # Fossil processes of a preparation handing a run user's password over (the
        # run's clone is a copy, docs/node.md; its password is set on the server, on `fossil user new`'s
        # standard input, and kept in the clone by the script `fossil sql` reads on its own).
        self.preparing: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._scan, daemon=True)
        self.thread.start()

    def _scan(self):
        while not self.stop.is_set():
            for pid in filter(str.isdigit, os.listdir("/proc")):
                for part in ("cmdline", "environ"):
                    try:
                        with open(f"/proc/{pid}/{part}", "rb") as handle:
                            data = handle.read()
                    except OSError:
                        continue
                    self.blobs.add(data)
                    if part == "cmdline" and _handles_a_password(data):
                        self.preparing.append(data.replace(b"\0", b" ").decode(errors="replace"))

    def finish(self) -> set[bytes]:
        self.stop.set()
        self.thread.join(10)
        return self.blobs


def _handles_a_password(cmdline: bytes) -> bool:
    """A run's clone made, pulled or given its password (at Fossil's prompt, or in the
    script its `sql` reads), or the run user's password set on the served repository."""
    return ((cmdline.startswith((b"fossil\0clone\0", b"fossil\0pull\0", b"fossil\0remote\0"))
             and b"@127.0.0.1" in cmdline)
            or cmdline.startswith((b"fossil\0user\0password\0", b"fossil\0user\0new\0"))
            or (cmdline.startswith(b"fossil\0sql\0-R\0") and cmdline.rstrip(b"\0").endswith(b"/repo.fossil")))


IN_RUN_SCAN = '''import re, time
token = re.compile(rb"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])")
found, processes, deadline = set(), set(), time.monotonic() + 40
while time.monotonic() < deadline:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        processes.add(pid)
        for part in ("cmdline", "environ"):
            try:
                found.update(t.decode() for t in token.findall(open("/proc/%s/%s" % (pid, part), "rb").read()))
            except OSError:
                pass
    if os.path.exists(os.path.join(os.environ["HOME"], "stop")):
        break
print("inrun " + json.dumps({"tokens": sorted(found), "processes": len(processes)}), flush=True)
'''


def secret_forms(password: str, login: str, project: str) -> list[bytes]:
    shared = hashlib.sha1(f"{project}/{login}/{password}".encode()).hexdigest()
    return [password.encode(), urllib.parse.quote(password, safe="").encode(), shared.encode()]


def test_no_password_is_readable_in_proc_while_runs_prepare_as_root_sees_it_or_from_inside_a_run(node):
    """Class 3: every preparation sets its run user's password and keeps it in the
    run's clone; root scans every process's cmdline and
    environ meanwhile (and must see such a step), and so does a run; no run's
    password, nor its sync secret, is ever there."""
    scanner_name = runner(node, "procscan", "import json\n" + IN_RUN_SCAN)
    inside = session(node, scanner_name, objective="scan", budget={"wall": "2m"})
    wait_for(lambda: systemctl("is-active", node.unit(inside)).strip() == "active", 60, 0.2, "the in-run scanner")
    scan = ProcessScan()
    records = []
    try:
        deadline = time.monotonic() + 120
        while not scan.preparing and time.monotonic() < deadline:  # until root has seen a preparation's step
            records += [session(node, "testrun", objective="sleep 60") for _ in range(3)]
            wait_for(lambda: all(systemctl("is-active", node.unit(r)).strip() == "active" for r in records), 120, 0.2,
                     "the runs started")
    finally:
        blobs = scan.finish()
    assert scan.preparing, "root never saw a preparation hand a password over: the scan proved nothing"
    (RunHome(unit_stem(node.server_code, inside)).on_host / "stop").write_text("")
    wait_for(lambda: "inrun " in journal(node.unit(inside)), 60, 0.5, "the in-run scan's report")
    report = json.loads(next(l for l in journal(node.unit(inside)).splitlines() if l.startswith("inrun "))[6:])
    with node.repository() as repository:
        project = repository.project_code
    forms = []
    for record in records:
        opened = RecordDir.of(node.config, record).load()[0]
        password = (RunHome(unit_stem(node.server_code, record)).on_host / PASSWORD_FILE).read_text().strip()
        forms += secret_forms(password, opened.record.user, project)
    forms += secret_forms(node.config.node_password(), node.config.node_user, project)
    leaks = [form for form in forms for blob in blobs if form in blob]
    assert not leaks, f"{len(leaks)} secret(s) readable in /proc while {len(scan.preparing)} preparation step(s) ran"
    assert not {f.decode() for f in forms} & set(report["tokens"]), "a run read a password in /proc"
    for record in [*records, inside]:
        node.stop(record)


LEAKED = '''import json, socket, sys
path = sys.argv[1]
out = {}
try:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(path)
    out["connected"] = True
    s.sendall(b'{"tool": "status", "input": {}}\\n')
    out["answer"] = s.recv(65536).decode()
except OSError as error:
    out["error"] = str(error)
print(json.dumps(out))
'''


def test_a_tool_socket_is_reached_by_its_run_alone_and_the_node_secrets_by_root_alone(node):
    """Class 5: the Fossil server's account, another run, and any process given
    the socket's path reach no run's tools; the node's state and secrets are root's."""
    fields = node.record(objective="sleep 600", restrict={"no_password": True}, budget={"wall": "5m"})
    record = node.post(fields)
    record_dir = RecordDir.of(node.config, record)
    wait_for(lambda: socket_accepts(tool_socket_path(record_dir)), 60, 0.2, "its tool socket")
    path = tool_socket_path(record_dir)
    secrets_ = [node.config.password_file, node.config.state_dir / "node-clone.fossil",
                f"/etc/ocx/{node.name}.admin-password"]
    # The Fossil server's account: no path to the socket, no secret
    probe = ("import json, os, socket, sys\nout = {}\nfor p in sys.argv[1:]:\n    try:\n"
             "        if p.endswith('.sock'):  # its path is longer than a socket's 108 bytes: by its directory\n"
             "            d = os.open(os.path.dirname(p), os.O_PATH)\n"
             "            socket.socket(socket.AF_UNIX).connect(f'/proc/self/fd/{d}/tools.sock')\n"
             "        else:\n            open(p).read()\n"
             "        out[p] = 'reached'\n    except OSError as e:\n        out[p] = type(e).__name__\nprint(json.dumps(out))\n")
    done = subprocess.run(["python3", "-c", probe, str(path), *map(str, secrets_)], user=node.config.server_account,
                          capture_output=True, text=True, timeout=60)
    seen = json.loads(done.stdout)
    assert set(seen.values()) == {"PermissionError"}, seen
    assert oct(node.config.state_dir.stat().st_mode & 0o777) == "0o700"
    # Any process of another unit handed the path (bound in, as a leak would): closed on before a byte
    leak = subprocess.run(["systemd-run", "--quiet", "--wait", "--pipe", "-p", "DynamicUser=yes",
                           "-p", f"BindPaths={record_dir.tools}:/run/leaked", "python3", "-c", LEAKED,
                           "/run/leaked/tools.sock"], capture_output=True, text=True, timeout=120)
    leaked = json.loads(leak.stdout)
    assert leaked.get("connected") and not leaked.get("answer"), leak  # it reached the socket, and was shut out
    # Another run, looking for it from inside its own sandbox
    other = session(node, runner(node, "socketprobe", f"import json\nsys.argv[1:] = [{str(path)!r}]\n" + LEAKED))
    assert node.response(other, timeout=90).outcome.value == "exited"
    tried = json.loads(next(l for l in journal(node.unit(other)).splitlines() if l.startswith("{")))
    assert not tried.get("connected") and not tried.get("answer"), tried
    node.stop(record)


def test_the_tool_service_bounds_what_it_reads_and_how_many_calls_wait(node):
    """Class 5, and D41's bounded reads: a call larger than REQUEST_BYTES is refused;
    calls past CONNECTIONS at once are closed; then a call is served again."""
    record = node.post(node.record(objective="sleep 600", restrict={"no_password": True}, budget={"wall": "5m"}))
    record_dir = RecordDir.of(node.config, record)
    path = tool_socket_path(record_dir)
    wait_for(lambda: socket_accepts(path), 60, 0.2, "its tool socket")

    def connected() -> socket.socket:
        sock = socket.socket(socket.AF_UNIX)
        sock.settimeout(60)
        with short_path(path) as reachable:
            sock.connect(reachable)
        return sock

    with connected() as big:
        big.sendall(b"x" * (REQUEST_BYTES + 2))
        answer = json.loads(big.recv(1 << 20))
    assert answer["stopped"]["field"] == "input", answer
    idle = [connected() for _ in range(CONNECTIONS)]  # each holds one of the run's calls, sending nothing
    with connected() as extra:  # taken after them, in order: no call left for it
        assert extra.recv(1) == b""  # closed at once, no thread taken
    for sock in idle:
        sock.close()

    def status() -> dict | None:
        try:  # closed on (reset) while the idle calls' threads let go: not yet
            with connected() as sock:
                sock.sendall(b'{"tool": "status", "input": {}}\n')
                data = sock.recv(1 << 20)
        except OSError:
            return None
        return json.loads(data) if data else None

    served = wait_for(status, 60, 0.5, "a call served again")
    assert served["stopped"] is None
    node.stop(record)

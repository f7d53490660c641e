"""The page service's socket (D30, units/ocx-page@.socket): whoever
connects hands the page a request with a login of its choosing
(FOSSIL_USER), so only the Fossil server's account, which runs the page's
door, may. A run tries from inside its own unit; another local account
tries with the socket's path; the server's account reaches it."""
import json
import pwd
import stat
import subprocess
from pathlib import Path

import pytest

from ocx.node.host_paths import page_socket_path

from .battery import runner, session
from .harness import journal, systemctl, wait_for

pytestmark = pytest.mark.systemd

# A door's request claiming the admin, asking for the JSON answer (login and token): what a run would want.
CLAIM = '''import json, socket, sys
path = sys.argv[1]
def block(data):
    return len(data).to_bytes(4, "big") + data
env = b"\\0".join([b"FOSSIL_USER=admin", b"FOSSIL_CAPABILITIES=as", b"REQUEST_METHOD=GET", b"QUERY_STRING=json",
                   b"SCRIPT_NAME=/ext/ocx", b"HTTP_HOST=127.0.0.1"])
out = {}
try:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(20)
    s.connect(path)
    out["connected"] = True
    s.sendall(block(env) + block(b"/") + block(b""))
    if s.recv(1) == b"R":
        s.sendall(b"G")
    out["answer"] = s.recv(65536).decode(errors="replace")
except OSError as error:
    out["error"] = type(error).__name__
print("claim " + json.dumps(out))
'''


def claim(*prefix: str, path: str, **as_account) -> dict:
    done = subprocess.run([*prefix, "python3", "-c", CLAIM, path], capture_output=True, text=True, timeout=120,
                          **as_account)
    return json.loads(next(line for line in done.stdout.splitlines() if line.startswith("claim "))[6:])


def test_only_the_fossil_servers_account_reaches_the_page_service_not_a_run_nor_another_user(node):
    path = page_socket_path(node.name)
    unit = f"ocx-page@{node.name}.service"
    server = pwd.getpwnam(node.config.server_account)
    info = Path(path).stat()
    assert stat.S_ISSOCK(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == server.pw_uid
    # The server's account (as Fossil runs the door): reached, and answered as the login it named
    reached = claim(path=path, user=server.pw_uid, group=server.pw_gid, extra_groups=[])
    assert reached.get("connected") and '"login": "admin"' in reached.get("answer", ""), reached
    # Another local account given the path: refused before a byte
    other = claim("systemd-run", "--quiet", "--wait", "--pipe", "-p", "DynamicUser=yes", path=path)
    assert other == {"error": "PermissionError"}, other
    # A run, from inside its unit, as its own user
    record = session(node, runner(node, "pageclaim", f"sys.argv[1:] = [{path!r}]\n" + CLAIM))
    assert node.response(record, timeout=120).outcome.value == "exited"
    wait_for(lambda: "claim " in journal(node.unit(record)), 60, 0.5, "the run's report")
    tried = json.loads(next(line for line in journal(node.unit(record)).splitlines() if line.startswith("claim "))[6:])
    assert not tried.get("connected") and tried.get("error") in ("PermissionError", "FileNotFoundError"), tried
    assert systemctl("is-active", unit).strip() == "active"

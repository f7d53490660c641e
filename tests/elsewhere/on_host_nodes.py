"""More steps inside one of tests/elsewhere's hosts, for a node's identity and its leaving (D29, D36, D38):
`python -m tests.elsewhere.on_host_nodes STEP ARGS...`; prints one JSON line (as on_host.py).

On the build host:
    attack-join URL TOKEN_FILE NAME CODE   a join as an attacker makes it, naming CODE as its clone's ('': none)
    grant-as NAME RECORD                   node NAME's node user asks the server for RECORD's run user
    follower NAME                          node NAME's follower: its state, its result, what it logged of a refusal
On the server host:
    remove NAME [LOGIN]                    ocx node remove NAME --at-node srv (with the admin's login when LOGIN)
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.elsewhere.on_host import SERVER
from tests.node_system.harness import ocx


def attack_join(url: str, token_file: str, name: str, code: str) -> dict:
    from ocx.node.elsewhere.link import ServerRefused, join

    try:
        password = join(url, Path(token_file).read_text().strip(), name, f"ocx-node-{name}", code or None, [])
    except ServerRefused as refused:
        return {"refused": [refused.field, refused.why], "joined": False}
    return {"refused": None, "joined": bool(password)}


def grant_as(name: str, record: str) -> dict:
    from ocx.node import config as node_config
    from ocx.node.elsewhere.link import ServerLink, ServerRefused

    try:
        login, password = ServerLink.of_node(node_config.load(name)).grant(record)
    except ServerRefused as refused:
        return {"refused": [refused.field, refused.why], "user": None}
    return {"refused": None, "user": login, "got_password": bool(password)}


def follower(name: str) -> dict:
    unit = f"ocx-follow@{name}.service"
    shown = subprocess.run(["systemctl", "show", unit, "-p", "ActiveState,SubState,Result,ExecMainStatus,NRestarts"],
                           capture_output=True, text=True).stdout  # one read: one state of the unit
    said = subprocess.run(["journalctl", "-u", unit, "--no-pager", "-o", "cat"], capture_output=True,
                          text=True).stdout
    return {**dict(line.split("=", 1) for line in shown.splitlines() if "=" in line),
            "refusals": said.count("refuses this node"), "exited_78": "status=78" in said, "said": said[-2000:]}


def remove(name: str, login: str | None = None) -> dict:
    admin = ["--login", login, "--password-file", f"/etc/ocx/{SERVER}.admin-password"] if login else []
    done = ocx("node", "remove", name, "--at-node", SERVER, *admin, check=False)
    return {"exit": done.returncode, "out": done.stdout, "err": done.stderr}


STEPS = {"attack-join": attack_join, "grant-as": grant_as, "follower": follower, "remove": remove}

if __name__ == "__main__":
    print(json.dumps(STEPS[sys.argv[1]](*sys.argv[2:])))

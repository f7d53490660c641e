"""Steps inside one of tests/elsewhere's hosts for releases (D46, D48):
`python -m tests.elsewhere.on_host_releases STEP ARGS...`; prints one JSON line (as on_host.py).

On either host:
    release ARGS...                 `ocx release ARGS` as root: its exit, output and error
    wheel                           a wheel of the working tree's OCX (tests/node_system/release_wheels.py); its path
    show                            `ocx release show --json`, with each link's check-in
    journal-of PREFIX               the journals of the units whose names start with PREFIX
    cut NAME POINT                  node NAME's commands cut themselves off at POINT once (ocx/node/cut.py),
                                    as root writes it; `cut NAME` says whether the cut is still waiting
On the server host:
    ci-checkin                      a person checks in OCX's tree (its build backend in the tree) on a new branch
                                    of an open command record's; once its ci verdict passed, the record stopped;
                                    the check-in's hash
    thread NAME NODE_USER           node NAME's releases thread read from the served repository: each post's sender,
                                    the post it replies to and answer block, and its last move (node/releases/moves.py)
"""
from __future__ import annotations

import json
import secrets
import subprocess
import sys
from pathlib import Path

from tests.elsewhere.on_host import server
from tests.node_system.harness import ocx

SRC = Path("/src")
BUILD_SECONDS = 1200


def release(*args: str) -> dict:
    done = ocx("release", *args, check=False, timeout=BUILD_SECONDS)
    return {"exit": done.returncode, "out": done.stdout[-4000:], "err": done.stderr[-4000:]}


def wheel() -> dict:
    from tests.node_system.release_wheels import working_tree_wheel

    directory = Path(f"/var/tmp/wheels-{secrets.token_hex(3)}")
    directory.mkdir(parents=True)
    return {"wheel": str(working_tree_wheel(SRC, directory))}


def show() -> dict:
    done = ocx("release", "show", "--json")
    return json.loads(done.stdout.strip().splitlines()[-1])


def journal_of(prefix: str) -> dict:
    listed = subprocess.run(["systemctl", "list-units", "--all", "--plain", "--no-legend", f"{prefix}*"],
                            capture_output=True, text=True).stdout.split()
    units = [word for word in listed if word.startswith(prefix)]
    said = {unit: subprocess.run(["journalctl", "-u", unit, "-o", "cat", "--no-pager"], capture_output=True,
                                 text=True).stdout[-3000:] for unit in units}
    return {"units": units, "said": said}


def cut(name: str, point: str | None = None) -> dict:
    from ocx.node.cut import CUT_ROOT

    path = Path(CUT_ROOT) / name
    if point is not None:
        path.parent.mkdir(mode=0o700, exist_ok=True)
        path.write_text(f"{point}\n")
    return {"waiting": path.exists()}


def ci_checkin() -> dict:
    from tests.node_system.battery import ci_values, ocx_tree, passed_checkin

    node = server()  # two hosts on a busy machine: longer for the verdict than on one
    checkin, _ = passed_checkin(node, f"relelse-{secrets.token_hex(2)}", ocx_tree(SRC), seconds=180)
    return {"checkin": checkin, "ci": ci_values(node, checkin)}


def thread(name: str, node_user: str) -> dict:
    from ocx.fossil.heads import thread_posts
    from ocx.node.releases.moves import last_move
    from ocx.node.releases.thread import releases_thread
    from ocx.protocol.release_request import answer_object

    with server().repository() as repository:
        root = releases_thread(repository, name, node_user)
        posts = [{"post": p.hash, "sender": p.sender, "reply_to": p.in_reply_to,
                  "facts": answer_object(repository.post(p.hash).body)}
                 for p in (thread_posts(repository, [root])[root] if root else [])]
        move = last_move(repository, name, node_user)
    return {"root": root, "posts": posts, "move": move.json() if move else None}


STEPS = {"release": release, "wheel": wheel, "show": show, "journal-of": journal_of, "ci-checkin": ci_checkin,
         "thread": thread, "cut": cut}

if __name__ == "__main__":
    print(json.dumps(STEPS[sys.argv[1]](*sys.argv[2:])))

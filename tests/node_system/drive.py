"""Driving a node inside the container from a host-side test: one step per call.

    python drive.py init NAME PORT | post NAME FIELDS_JSON | response NAME RECORD [TIMEOUT] | active NAME RECORD
"""
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.node_system.harness import Login, Node, ocx, systemctl  # noqa: E402


def node(name: str) -> Node:
    from ocx.node import config as node_config
    from ocx.setup.init import admin_password_file

    admin = Login("admin", admin_password_file(name).read_text().strip())
    return Node(name, node_config.load(name), admin, Path(tempfile.mkdtemp()))


def main(step: str, name: str, *args: str) -> None:
    if step == "init":
        ocx("node", "init", "--name", name, "--port", args[0])
        node(name).runner_page(node(name).admin)
    elif step == "post":
        running = node(name)
        print(running.post(running.record(**json.loads(args[0]))))
    elif step == "active":
        print(systemctl("is-active", node(name).unit(args[0])).strip())
    elif step == "response":
        response = node(name).response(args[0], timeout=float(args[1]) if len(args) > 1 else 60)
        print(json.dumps(response.model_dump(mode="json")))


if __name__ == "__main__":
    main(*sys.argv[1:])

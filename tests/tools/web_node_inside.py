"""Run inside the systemd container for the tests that drive a node from the
host (test_web_on_node.py, test_from_another_host.py, test_console_on_node.py):
`python -m tests.tools.web_node_inside setup [PUBLISHED]|answers RECORD|tags CHECKIN|
login NAME LETTERS|sql QUERY [ARG...]|post HASH|journal UNIT`. Prints one JSON line.

`setup` makes a node with `ocx node init` (its web page included), a
person's login with admin, a runner page whose program ends at once, and
a forwarder from the container's PUBLISHED port to the server's own
127.0.0.1 port (the server listens on 127.0.0.1 only; Docker's published
port reaches the container's interface). The page's address is then
http://127.0.0.1:PUBLISHED both on the host and inside the container, so
the page's own writes, made from inside, go to the same base URL as the
browser's Referer names.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.node_system.harness import Login, Node, ocx, wait_for

NAME = "webnode"
PORT = 8197
PUBLISHED = 18197  # unless the host names another: one free there, as two worktrees' tests may run at once
PERSON = "pat"
HOME = Path("/var/tmp/webnode-home")
AGENT_RUNNER = "toolagent"  # tests/node_system/tools_agent.py: reviews, fixes and pushes through OCX's tools
AGENT = Path(__file__).resolve().parents[1] / "node_system" / "tools_agent.py"


def node() -> Node:
    from ocx.node import config as node_config
    from ocx.setup.init import admin_password_file

    config = node_config.load(NAME)
    HOME.mkdir(parents=True, exist_ok=True)
    return Node(NAME, config, Login("admin", admin_password_file(NAME).read_text().strip()), HOME)


def _answers(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url + "/index", timeout=2):
            return True
    except OSError:
        return False


def setup(published_port: str = str(PUBLISHED)) -> dict:
    ocx("node", "init", "--name", NAME, "--port", str(PORT))
    running = node()
    wait_for(lambda: _answers(running.url), 30, what="the Fossil server")
    person = running.login(PERSON, "a")
    running.runner_page(running.admin)
    agent = {"command": [sys.executable, str(AGENT)], "homes": [], "env": {}}
    running.clone_of(running.admin).write_wiki(f"sandbox/{AGENT_RUNNER}", f"```json\n{json.dumps(agent)}\n```\n")
    subprocess.run(["systemd-run", "--unit", "ocx-test-forward", "--collect", sys.executable,
                    str(Path(__file__).with_name("forward.py")), published_port, str(PORT)], check=True,
                   capture_output=True)
    published = f"http://127.0.0.1:{published_port}"
    wait_for(lambda: _answers(published), 30, what="the forwarder")
    admin_clone = running.clone_of(running.admin)
    checkout = admin_clone.open_checkout(HOME / "admin-checkout")
    (checkout / "work.txt").write_text("work to judge\n")
    checkin = admin_clone.commit(checkout, "work for the person to audit")
    return {"url": published, "login": person.name, "password": person.password, "checkin": checkin,
            "server_code": running.server_code, "node_user": running.config.node_user, "name": NAME}


def answers(record: str) -> dict:
    """The record's sender and every response to it with its sender (rcvfrom)."""
    running = node()
    with running.repository() as repository:
        sender = repository.sender(record).login
    return {"record_sender": sender,
            "responses": [[response.outcome, by] for response, by in running.responses(record)]}


def verdict_tags(checkin: str) -> dict:
    """Every change of `audited` or `ci` on CHECKIN, as V2's readers see it."""
    with node().repository() as repository:
        changes = repository.tag_history(checkin, ["audited", "ci"])
    return {"tags": [[c.name, c.value, c.sender.login] for c in changes]}


def login(name: str, letters: str) -> dict:
    """A person's login on the node, with exactly LETTERS; its password."""
    return {"login": name, "password": node().login(name, letters).password}


def sql(query: str, *args: str) -> dict:
    """QUERY on the node's repository, read-only: what the tests check artifacts with."""
    import sqlite3

    db = sqlite3.connect(f"file:{node().config.repository}?mode=ro", uri=True)
    try:
        return {"rows": [list(row) for row in db.execute(query, args).fetchall()]}
    finally:
        db.close()


def post(hash_: str) -> dict:
    """A forum post on the node: its sender (rcvfrom), thread and text, decoded from its blob."""
    with node().repository() as repository:
        found = repository.post(hash_)
    return {"sender": found.sender.login, "root": found.root, "body": found.body}


def unit_journal(unit: str) -> dict:
    from tests.node_system.harness import journal

    return {"journal": journal(unit)[-6000:]}


if __name__ == "__main__":
    command = sys.argv[1]
    done = {"setup": setup, "answers": answers, "tags": verdict_tags, "login": login, "sql": sql,
            "post": post, "journal": unit_journal}[command](*sys.argv[2:])
    print(json.dumps(done))

"""A node elsewhere on a second host (issue 16), with the server's node on
the first: two systemd containers on one Docker network, records posted
through the server's web forms by real logins, answers read from the
served repository with their senders (rcvfrom)."""
from __future__ import annotations

import json
import time

import pytest

from .hosts import SERVER_URL, Hosts, needs_engine, on, wait_until

pytestmark = needs_engine


@pytest.fixture(scope="module")
def hosts():
    pair = Hosts()
    try:
        codes = pair.start()
        pair.codes = codes
        yield pair
    finally:
        pair.stop()


def test_a_build_host_joins_with_one_command_and_the_server_lists_it(hosts):
    status = on(hosts.server, "status")
    nodes = {n["name"]: n for n in status["result"]["nodes"]}
    assert nodes["srv"]["here"] and nodes["srv"]["server_code"] == hosts.codes["server_code"]
    build = nodes["build1"]
    assert build["server_code"] == hosts.codes["build_code"] != hosts.codes["server_code"]
    assert build["node_user"] == "ocx-node-build1" and not build["here"]
    user = on(hosts.server, "letters", "ocx-node-build1")
    assert sorted(user["letters"]) == sorted("24cgir")  # D37: never admin or setup
    # Its follower holds a request open: the server heard from it.
    wait_until(lambda: on(hosts.server, "status")["result"]["nodes"][1]["heard"], 30, "the follower's request")
    assert on(hosts.build, "active", "ocx-follow@build1.service")["ActiveState"] == "active"
    # Run again, it changes nothing and asks for no admin.
    again = hosts.build.exec(["/opt/ocx/venv/bin/python", "-m", "ocx.entry.launch", "node", "init", "--name", "build1",
                              "--server", SERVER_URL])
    assert again.exit_code == 0 and "nothing changed" in again.output, again.output


def answers(hosts, record: str, timeout: float = 90.0) -> list:
    """Every response to RECORD in the served repository, once there is one: [outcome, note, node, sender]."""
    return wait_until(lambda: on(hosts.server, "answers", record)["responses"], timeout, f"an answer to {record[:12]}")


def unit_of(code: str, record: str) -> str:
    return f"ocx-{code[:12]}-{record[:12]}.service"


def test_a_session_for_the_build_host_runs_there_and_is_answered_once_as_its_node_user(hosts):
    build = hosts.codes["build_code"]
    posted = on(hosts.server, "post", json.dumps({"node": build, "objective": "exit 0"}))
    record, user = posted["record"], posted["user"]
    (outcome, note, node, sender), *more = answers(hosts, record)
    assert not more and (outcome, node, sender) == ("exited", build, "ocx-node-build1"), (outcome, note, sender)
    ran = on(hosts.build, "journal", unit_of(build, record))["journal"]
    assert "exit 0" in ran  # the program's own echo of its first delivery, on the build host
    assert on(hosts.server, "journal", unit_of(build, record))["journal"].strip() == ""  # never on the server
    letters = on(hosts.server, "letters", user)
    assert letters["letters"] == "" and build in letters["contact"]  # C4 withdrawn; D37 it works for build1

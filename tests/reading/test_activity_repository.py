"""`ocx activity`'s reading of the repository (D33) on a real served
repository: which records are this node's and open, which responses answer
them (C1, C4, D31); and where no system bus answers, it says so."""
from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fossil.conftest import Served, start_served
from ocx.node.activity import read_activity

from .conftest import LOGINS, record_text

pytestmark = pytest.mark.fossil
NODE_USER = "ocx-node"


def response_text(node: str, record: str, outcome: str, note: str) -> str:
    response = {"ocx": 1, "kind": "response", "node": node, "answers": record, "outcome": outcome, "note": note}
    return "Answered.\n\n```json\n" + json.dumps(response) + "\n```\n"


@dataclass
class Posted:
    served: Served
    node: str
    open_one: str  # nobody answered it
    answered: str  # the node user answered it
    lost_too_soon: str  # only a non-node login's response and an admin's premature `lost`
    by_bob: str  # sent by a login without admin or setup: never this node's (C1)
    other_node: str  # for another server-code
    in_ticket: str  # a record in a ticket change, answered there
    answers: tuple[str, str]  # the two answers, in the order received


@pytest.fixture(scope="module")
def posted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Posted]:
    served = start_served(tmp_path_factory.mktemp("activity"), LOGINS)
    try:
        with served.repository() as repository:
            node = repository.server_code
        admin, bob, node_user = served.web("admin"), served.web("bob"), served.web(NODE_USER)
        open_one = admin.new_thread("OCX record: open", record_text(node, ["dev"], "stays open"))
        answered = admin.new_thread("OCX record: answered", record_text(node, ["dev"], "answered"))
        first = node_user.reply(answered, response_text(node, answered, "exited", "exit 0 after 3 seconds"))
        lost_too_soon = admin.new_thread("OCX record: not yet lost", record_text(node, ["dev"], "2m wall"))
        bob.reply(lost_too_soon, response_text(node, lost_too_soon, "exited", "bob says so"))
        admin.reply(lost_too_soon, response_text(node, lost_too_soon, "lost", "too soon (D31)"))
        by_bob = bob.new_thread("OCX record: bob's", record_text(node, ["dev"], "bob may not ask"))
        other_node = admin.new_thread("OCX record: elsewhere", record_text("ab" * 20, ["dev"], "another node"))
        ticket = admin.new_ticket("A ticket record", "Records by ticket.")
        in_ticket = admin.ticket_change(ticket, record_text(node, ["dev"], "by ticket"))
        second = served.web(NODE_USER).ticket_change(ticket, response_text(node, in_ticket, "stopped", "stopped by admin"))
        yield Posted(served, node, open_one, answered, lost_too_soon, by_bob, other_node, in_ticket, (first, second))
    finally:
        served.server.stop()


def test_open_records_are_this_nodes_unanswered_ones(posted) -> None:
    with posted.served.repository() as repository:
        found = read_activity(repository, NODE_USER)
    assert found.node == posted.node
    assert [entry.placed.hash for entry in found.open] == [posted.open_one, posted.lost_too_soon]
    assert found.open[0].record.objective == "stays open" and found.open[0].placed.sender == "admin"
    assert [(p.hash, p.message.answers, p.message.outcome.value, p.sender) for p in found.responses] == [
        (posted.answers[0], posted.answered, "exited", NODE_USER),
        (posted.answers[1], posted.in_ticket, "stopped", NODE_USER)]
    assert found.responses[1].place_kind == "ticket"


def test_only_the_latest_responses_are_shown(posted) -> None:
    with posted.served.repository() as repository:
        assert [p.hash for p in read_activity(repository, NODE_USER, latest=1).responses] == [posted.answers[1]]
        # Another node user: nothing the node's login wrote answers anything for it.
        assert len(read_activity(repository, "someone-else").open) == 4


def ocx(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    found = shutil.which("ocx") or str(Path(sys.executable).with_name("ocx"))
    return subprocess.run([found, *args], capture_output=True, text=True, timeout=60, env={**os.environ, **env})


NO_BUS = {"DBUS_SYSTEM_BUS_ADDRESS": f"unix:path=/nonexistent/{secrets.token_hex(4)}/bus"}


def test_ocx_activity_without_a_system_bus_says_so_and_shows_the_rest(posted) -> None:
    done = ocx("activity", "-R", str(posted.served.path), "--json", env=NO_BUS)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["node"] == posted.node and answer["node_user"] == NODE_USER
    assert answer["systemd"]["reachable"] is False and answer["systemd"]["why"]
    assert [(r["hash"], r["units"]) for r in answer["open"]] == [(posted.open_one, None), (posted.lost_too_soon, None)]
    assert [(r["answers"], r["outcome"], r["note"]) for r in answer["responses"]] == [
        (posted.answered, "exited", "exit 0 after 3 seconds"), (posted.in_ticket, "stopped", "stopped by admin")]
    readable = ocx("activity", "-R", str(posted.served.path), env=NO_BUS).stdout
    assert "open records: 2" in readable and "units: systemd not reachable here" in readable
    assert f"answers {posted.answered[:12]}: exited, exit 0 after 3 seconds  (from {NODE_USER})" in readable


def test_ocx_activity_needs_to_be_told_which_repository_off_a_node(posted, tmp_path) -> None:
    if Path("/etc/ocx").is_dir():
        pytest.skip("this host has node configurations: one of them may be found")
    done = ocx("activity", env=NO_BUS)
    assert done.returncode == 2 and "--repository" in done.stderr


def test_ocx_activity_names_a_repository_it_cannot_read(tmp_path) -> None:
    done = ocx("activity", "-R", str(tmp_path / "absent.fossil"), env=NO_BUS)
    assert done.returncode == 1 and "cannot read repository" in done.stderr and "absent.fossil" in done.stderr

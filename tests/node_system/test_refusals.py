"""What a node refuses, naming the field (C6, C7, D8, D14, D16, D35), and what it ignores (C1)."""
import json
import subprocess

import pytest

from ocx.protocol import Outcome

from .harness import systemctl, wait_for

pytestmark = pytest.mark.systemd


@pytest.mark.parametrize("changes,field", [
    ({"budget": {"wall": "2 hours"}}, "budget.wall"),
    ({"budget": {"wall": "1m", "gpu": 1}}, "budget.gpu"),
    ({"sandbox": {"network": True, "read_only": ["/nonexistent-ocx"], "read_write": []}}, "sandbox.read_only[0]"),
    ({"sandbox": {"network": True, "read_only": [], "read_write": ["/var/lib/ocx"]}}, "sandbox.read_write[0]"),
    ({"runner": "nosuchrunner"}, "runner"),
    ({"remote": True}, "remote"),
    ({"user": "ocx-node"}, "user"),
    ({"runner": "command", "checkins": ["trunk"], "hears": []}, "command"),
    ({"restrict": {"branch": "fixes"}}, "restrict.branch"),
])
def test_a_record_the_node_cannot_run_is_refused_naming_the_field(node, changes, field):
    record = node.post(node.record(**changes))
    response = node.response(record)
    assert response.outcome is Outcome.refused
    assert response.note.startswith(f"{field}:"), response.note


def test_a_run_user_holding_admin_is_refused(node):
    node.login("boss-run", "a")
    response = node.response(node.post(node.record(user="boss-run")))
    assert response.outcome is Outcome.refused and response.note.startswith("user:")


def test_a_runner_page_written_by_a_non_admin_does_not_count(node):
    writer = node.login("page-writer", "gio234j k")
    node.runner_page(writer, name="sneaky")
    response = node.response(node.post(node.record(runner="sneaky")))
    assert response.outcome is Outcome.refused and response.note.startswith("runner:")


def quiet(node, record: str) -> None:
    """Nothing answers RECORD, and no unit starts for it, though the node read a later record."""
    node.barrier()
    assert node.responses(record) == []
    assert node.unit(record) not in subprocess.run(
        ["systemctl", "list-units", "--all", "ocx-*", "--no-legend"], capture_output=True, text=True).stdout


@pytest.mark.parametrize("changes", [{"node": "f" * 40}, {"ocx": 2}, {"kind": "order"}])
def test_messages_not_for_this_node_write_nothing(node, changes):
    quiet(node, node.post(node.record(**changes)))


def test_a_record_from_a_login_without_admin_writes_nothing(node):
    developer = node.login("dev-ann", "gio234")
    quiet(node, node.post(node.record(), by=developer))


def test_an_edit_of_a_record_is_not_a_message(node):
    note = node.post({"note": "not yet a record"})
    edit = node.admin.web(node.url).edit(note, "```json\n" + json.dumps(node.record()) + "\n```\n")
    node.barrier()
    assert node.responses(edit) == [] and node.responses(note) == []


def test_a_response_from_anyone_but_the_node_user_does_not_close_a_record(node):
    record = node.post(node.record(objective="sleep"))
    wait_for(lambda: node.unit(record) in subprocess.run(
        ["systemctl", "list-units", "ocx-*", "--no-legend"], capture_output=True, text=True).stdout, 30, what="the run")
    forged = {"ocx": 1, "kind": "response", "node": node.server_code, "answers": record,
              "outcome": "exited", "note": "forged"}
    node.reply(record, "```json\n" + json.dumps(forged) + "\n```\n")
    node.barrier()  # the forged response was read; the record is still open
    assert systemctl("is-active", node.unit(record)).strip() == "active"
    node.stop(record)
    wait_for(lambda: [r for r, s in node.responses(record) if s == node.config.node_user], 60, what="the node's answer")
    ours = [r for r, s in node.responses(record) if s == node.config.node_user]
    assert len(ours) == 1 and ours[0].outcome is Outcome.stopped

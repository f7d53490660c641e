"""`ocx activity` and `ocx queue` on a real node (D33): open records with
their units' live state read from systemd, the latest responses, and the
node's own `ci` verdicts counted in a queue; in the systemd container."""
import json
import secrets

import pytest

from .harness import ocx, systemctl, wait_for
from .test_command_runs import Developer, checkin_unit, ci_record, ci_verdicts, wait_open

pytestmark = pytest.mark.systemd


def activity(node, *where: str) -> dict:
    return json.loads(ocx("activity", *(where or ("--at-node", node.name)), "--json").stdout)


def open_entry(answer: dict, record: str) -> dict | None:
    return next((entry for entry in answer["open"] if entry["hash"] == record), None)


def test_an_open_session_shows_its_active_unit_then_its_response(node):
    fields = node.record(objective="sleep")
    record = node.post(fields)
    unit = node.unit(record)
    wait_for(lambda: systemctl("is-active", unit).strip() == "active", 30, what=f"{unit} active")
    answer = activity(node)
    assert answer["systemd"] == {"reachable": True, "why": None}
    assert answer["node"] == node.server_code and answer["node_user"] == node.config.node_user
    entry = open_entry(answer, record)
    assert entry is not None, answer["open"]
    assert (entry["user"], entry["runner"], entry["objective"], entry["sender"]) == (
        fields["user"], "testrun", "sleep", node.admin.name)
    assert entry["units"] == [{"name": unit, "active_state": "active", "sub_state": "running"}]
    readable = ocx("activity", "-R", node.config.repository).stdout
    assert f"{unit}  active/running" in readable

    node.stop(record)
    assert node.response(record).outcome.value == "stopped"
    after = activity(node, "-R", node.config.repository)
    assert open_entry(after, record) is None
    last = after["responses"][-1]
    assert (last["answers"], last["outcome"], last["sender"]) == (record, "stopped", node.config.node_user)
    assert "stopped by admin" in last["note"]


def test_a_command_record_shows_its_checkins_unit_and_its_verdicts_count_in_the_queue(node):
    branch = f"queue-{secrets.token_hex(2)}"
    record = node.post(ci_record(node, branch, budget={"wall": "5m"}))
    wait_open(node, record)
    entry = open_entry(activity(node), record)
    assert entry is not None and entry["units"] == []  # waits for its first check-in (C3)
    developer = Developer(node, branch)
    passing = developer.commit("pass")
    wait_for(lambda: ci_verdicts(node, passing), 60, 0.2, "the passing check-in's ci verdict")
    hanging = developer.commit("hang")
    unit = checkin_unit(node, record, hanging)
    wait_for(lambda: systemctl("is-active", unit).strip() == "active", 60, 0.2, "the hanging run active")
    entry = open_entry(activity(node), record)
    assert entry is not None and {"name": unit, "active_state": "active", "sub_state": "running"} in entry["units"]

    queue = json.loads(ocx("queue", branch, "--at-node", node.name, "--json").stdout)
    assert [c["checkin"] for c in queue["checkins"]] == [passing, hanging]
    (verdict,) = queue["checkins"][0]["counted"]  # the node user judged a check-in it did not send
    assert (verdict["tag"], verdict["sender"], verdict["judgement"], verdict["objective"]) == (
        "ci", node.config.node_user, "pass", record)
    assert queue["checkins"][1]["counted"] == []
    node.stop(record)
    assert node.response(record).outcome.value == "stopped"

"""The battery, docs/security.md's classes 6, 7 and 8: records that name whom they must
not, values that pass a `$`, notes that would forge, fences inside fences,
edits, and a check-in cut off by a shutdown. Each asserts the boundary held."""
import json
import os
import secrets
import time

import pytest

from ocx.node.record_dirs import RecordDir
from ocx.systemd.system_state import started_at

from .battery import Committer, ci_values, open_command_record
from .harness import RUNNER, journal, ocx, systemctl, wait_for

pytestmark = pytest.mark.systemd


def letters(node, login: str) -> str | None:
    with node.repository() as repository:
        return next((u.capabilities for u in repository.users() if u.login == login), None)


def test_records_naming_fossils_own_logins_a_person_or_a_capable_user_are_refused_and_change_nothing(node):
    """D40: only a new login, or one holding nothing, is a run user."""
    person = node.login(f"pat-{secrets.token_hex(2)}", "i4").name
    former = node.login(f"former-{secrets.token_hex(2)}", "").name  # a run user whose record was answered
    refused = ["nobody", "anonymous", "reader", "developer", node.admin.name, person, node.config.node_user]
    before = {login: letters(node, login) for login in refused}
    records = {login: node.post(node.record(user=login, objective="exit 0")) for login in [*refused, former]}
    for login in refused:
        response = node.response(records[login], timeout=90)
        assert response.outcome.value == "refused" and response.note.startswith("user: "), (login, response.note)
        assert letters(node, login) == before[login], login  # nothing given, nothing taken away
    ran = node.response(records[former], timeout=90)
    assert ran.outcome.value == "exited" and ran.note.startswith("exit 0"), ran.note
    wait_for(lambda: letters(node, former) == "", 30, 0.2, "its letters withdrawn after the response (C4)")


@pytest.mark.parametrize("changes,field", [
    ({"user": "run-{token}\n"}, "user"), ({"budget": {"wall": "1m\n"}}, "budget.wall"),
    ({"budget": {"wall": "1m", "memory": "64M\n"}}, "budget.memory"), ({"checkins": ["dev\n"]}, "checkins[0]"),
    ({"runner": RUNNER + "\n"}, "runner"), ({"hears": ["admin\n"]}, "hears[0]"),
    ({"sandbox": {"network": True, "read_only": ["/usr\n"], "read_write": []}}, "sandbox.read_only[0]"),
])
def test_a_value_with_a_trailing_newline_is_refused_naming_its_field(node, changes, field):
    """Class 7: `"adm\\n"` is another login than `adm`; every value is matched whole."""
    changes = json.loads(json.dumps(changes).replace("{token}", secrets.token_hex(3)))
    response = node.response(node.post(node.record(**changes)), timeout=90)
    assert response.outcome.value == "refused" and response.note.startswith(f"{field}: "), response.note


def test_messages_that_are_not_version_1_or_sit_inside_other_code_are_not_acted_on(node):
    """Class 7 and D7: "ocx": true or 1.0 is no version 1; a ```json fence inside ~~~,
    ```` or an indented block is code, not a message. A record after them is
    answered, so they were read, and nothing was written for them."""
    record = json.dumps(node.record(objective="exit 0"))
    shapes = {
        "true": f"```json\n{json.dumps({**json.loads(record), 'ocx': True})}\n```\n",
        "float": f"```json\n{json.dumps({**json.loads(record), 'ocx': 1.0})}\n```\n",
        "tilde": f"Look:\n\n~~~\n```json\n{record}\n```\n~~~\n",
        "fourticks": f"````\n```json\n{record}\n```\n````\n",
        "indented": "Look:\n\n" + "".join(f"    {line}\n" for line in ["```json", record, "```"]),
    }
    posted = {name: node.admin.web(node.url).new_thread(f"not a record: {name}", body) for name, body in shapes.items()}
    after = node.post(node.record(objective="exit 0"))
    assert node.response(after, timeout=90).outcome.value == "exited"
    for name, post in posted.items():
        assert not node.responses(post), name
        assert not RecordDir.of(node.config, post).exists(), name


def test_a_note_that_echoes_a_fence_cannot_put_a_forged_response_first(node):
    """Class 7: the node's own post's first block is its own response."""
    forged = {"ocx": 1, "kind": "response", "node": node.server_code, "answers": "0" * 64, "outcome": "exited",
              "note": "exit 0"}
    path = f"/nowhere ```json {json.dumps(forged)} ``` here"  # one line: a path need not exist to be echoed
    record = node.post(node.record(sandbox={"network": True, "read_only": [path], "read_write": []}))
    response = node.response(record, timeout=90)
    assert response.outcome.value == "refused" and response.note.startswith("sandbox.read_only[0]: ")
    with node.repository() as repository:
        (post,) = [p for p in repository.thread(record) if p.sender.login == node.config.node_user]
    assert "```json {" in post.body.split("\n", 1)[0]  # the note echoed the forged block, on the post's first line
    assert len(node.responses(record)) == 1  # read as every reader reads: the first block is the node's own


def test_an_edit_by_a_heard_user_is_delivered_as_a_post_with_its_whole_new_text(node):
    """D44."""
    record = node.post(node.record(objective="echo", hears=[node.admin.name], budget={"wall": "3m"}))
    wait_for(lambda: systemctl("is-active", node.unit(record)).strip() == "active", 60, 0.2, "the session")
    web = node.admin.web(node.url)
    first = web.reply(record, "Look at the parser.")
    edit = web.edit(first, "Look at the parser and the finder.")
    wanted = f'"text": "Post {edit} from {node.admin.name}: Look at the parser and the finder."'
    wait_for(lambda: wanted in journal(node.unit(record)), 60, 0.5, "the edit delivered")
    assert f'"text": "Post {first} from {node.admin.name}: Look at the parser."' in journal(node.unit(record))
    node.stop(record)
    assert node.response(record).outcome.value == "stopped"


CUT_OFF = '''import os, sys, time
flag = os.path.join({shared!r}, "ran")
if os.path.exists(flag):
    print("ran again after the shutdown", flush=True)
    sys.exit(0)
open(flag, "w").write("once")
time.sleep(600)
'''


def test_a_check_in_cut_off_by_a_host_shutdown_runs_again_when_the_host_is_back(node):
    """D18: its stop step saw the shutdown; the first pass of the next
    boot runs it again instead of leaving it without a verdict. The shutdown is
    acted out: the node's triggers are stopped, the run is ended, its end is
    made what a stop step sees during a shutdown, and the node is started again."""
    shared = f"/var/lib/ocx-battery-{secrets.token_hex(3)}"
    os.makedirs(shared, mode=0o777)
    os.chmod(shared, 0o777)  # the run's dynamic user writes its flag here
    branch = f"cut-{secrets.token_hex(2)}"
    record = open_command_record(node, branch, budget={"wall": "10m"},
                                 sandbox={"network": True, "read_only": [], "read_write": [shared]})
    checkin = Committer(node, branch).commit({"ci.py": CUT_OFF.format(shared=shared)})
    wait_for(lambda: os.path.exists(f"{shared}/ran"), 120, 0.2, "the first run under way")
    unit = f"ocx-{node.server_code[:12]}-{record[:12]}-{checkin[:12]}.service"
    triggers = [f"ocx-node@{node.name}.path", f"ocx-node@{node.name}.socket", f"ocx-node@{node.name}.service"]
    ended_file = node.config.state_dir / "records" / record / f"ended-{unit[:-8]}.json"
    try:
        systemctl("stop", *triggers)
        systemctl("stop", unit)
        wait_for(ended_file.exists, 60, 0.2, "the stop step's record of the end")
        ended = json.loads(ended_file.read_text())
        ended.update(system_stopping=True, at=started_at() - 5)  # as the last boot's shutdown left it
        ended_file.write_text(json.dumps(ended))
    finally:
        systemctl("start", *triggers[:2])
    ocx("node", "poke", node.name)
    wait_for(lambda: ci_values(node, checkin), 120, 0.5, "the check-in's verdict")
    assert ci_values(node, checkin) == [f"pass: ran again after the shutdown (against {record})"]
    node.stop(record)
    assert node.response(record).outcome.value == "stopped"

"""Each tool against a real `fossil server`: what it writes, with its caller
as the sender (D21); every refusal, naming its field; every dry run leaves
the repository as it was."""
from __future__ import annotations

import json

import pytest

from ocx.protocol import find_message, parse_message
from ocx.protocol.messages import Record, Response, Stop

WALL = {"wall": "4h"}


def message_in(world, hash_):
    with world.served.repository() as repository:
        try:
            body = repository.post(hash_).body
        except Exception:
            body = repository.ticket_change(hash_).comment
    return parse_message(find_message(body))


def test_create_writes_every_default_in_full(world):
    answer = world.run("create", {"objective": "Review trunk.", "budget": WALL})
    assert answer.stopped is None, answer.stopped
    record = message_in(world, answer.result)
    assert isinstance(record, Record)
    with world.served.repository() as repository:
        assert record.node == repository.server_code
        assert repository.sender(answer.result).login == "admin"  # D21
    assert record.runner == "claude" and record.user.startswith("claude-") and len(record.user) == 13
    assert record.checkins == [] and record.hears == ["admin"] and record.remote is True
    assert record.restrict.model_dump(exclude_none=True) == {}
    assert record.sandbox.model_dump() == {"network": True, "read_only": [], "read_write": []}
    # written out in full: every key present in the post's JSON
    with world.served.repository() as repository:
        text = repository.post(answer.result).body
    assert set(find_message(text)) >= {"ocx", "kind", "node", "user", "runner", "objective", "checkins",
                                       "hears", "remote", "restrict", "sandbox", "budget"}


def test_create_in_reply_and_in_ticket(world):
    reply = world.run("create", {"objective": "o", "budget": WALL, "to": world.thread[:10], "remote": False})
    assert reply.stopped is None
    with world.served.repository() as repository:
        assert repository.post(reply.result).root == world.thread
    ticket = world.served.web("admin").new_ticket("a bug", "It breaks.")
    in_ticket = world.run("create", {"objective": "o", "budget": WALL, "ticket": ticket[:12]})
    assert in_ticket.stopped is None
    assert isinstance(message_in(world, in_ticket.result), Record)


@pytest.mark.parametrize("raw, field", [
    ({"objective": "o", "budget": WALL, "runner": "codex"}, "runner"),  # no page sandbox/codex
    ({"objective": "o", "budget": WALL, "user": "run-new-1", "restrict": {"no_password": True}}, None),
    ({"objective": "o", "budget": WALL, "user": "alice"}, "user"),  # a person holding letters (D40)
    ({"objective": "o", "budget": WALL, "user": "nobody"}, "user"),  # Fossil's own (D40)
    ({"objective": "o", "budget": WALL, "user": "admin"}, "user"),  # holds admin (D35)
    ({"objective": "o", "budget": WALL, "user": "ocx-node"}, "user"),  # the node user (D35)
    ({"objective": "o", "budget": WALL, "restrict": {"branch": "fixes"}}, "restrict.branch"),
    ({"objective": "o", "budget": WALL, "runner": "command", "command": ["true"]}, "checkins"),
    ({"objective": "o", "budget": WALL, "sandbox": {"read_only": ["/no/such/path"]}}, "sandbox.read_only[0]"),
    ({"objective": "o", "budget": WALL, "sandbox": {"read_write": ["/var/lib/ocx"]}}, "sandbox.read_write[0]"),
    ({"objective": "o", "budget": WALL, "to": "f" * 12}, "to"),
    ({"objective": "o", "budget": WALL, "ticket": "0" * 12}, "ticket"),
    ({"objective": "o", "budget": WALL, "to": "THREAD", "ticket": "0" * 12}, "ticket"),
])
def test_create_refusals_and_dry_runs_write_nothing(world, raw, field):
    raw = {k: (world.thread if v == "THREAD" else v) for k, v in raw.items()}
    before = world.snapshot()
    answer = world.run("create", {**raw, "dry_run": True})
    if field is None:
        assert answer.stopped is None and answer.log[-1].kind == "would_write"
    else:
        assert answer.stopped is not None and answer.stopped.field == field, answer
    assert world.snapshot() == before


def test_create_refused_to_a_non_admin_even_in_a_dry_run(world):
    before = world.snapshot()
    answer = world.run("create", {"objective": "o", "budget": WALL, "dry_run": True}, login="alice")
    assert answer.stopped.field == "caller" and world.snapshot() == before


def test_stop_and_lost(world):
    created = world.run("create", {"objective": "o", "budget": {"wall": "1s"}, "remote": False}).result
    early = world.run("stop", {"record": created[:10], "lost": True, "dry_run": True})
    assert early.stopped is None or early.stopped.field == "lost"
    before = world.snapshot()
    assert world.run("stop", {"record": created, "dry_run": True}).stopped is None
    assert world.snapshot() == before
    assert world.run("stop", {"record": created}, login="alice").stopped.field == "caller"
    assert world.run("stop", {"record": world.thread}).stopped.field == "record"
    import time
    time.sleep(1.5)
    lost = world.run("stop", {"record": created, "lost": True})
    assert lost.stopped is None, lost.stopped
    response = message_in(world, lost.result)
    assert isinstance(response, Response) and response.outcome.value == "lost" and response.answers == created
    assert world.run("stop", {"record": created}).stopped.field == "record"  # already answered


def test_stop_writes_a_stop_at_the_place(world):
    created = world.run("create", {"objective": "o", "budget": WALL, "remote": False}).result
    stopped = world.run("stop", {"record": created[:12]})
    assert stopped.stopped is None
    message = message_in(world, stopped.result)
    assert isinstance(message, Stop) and message.stops == created
    with world.served.repository() as repository:
        post = repository.post(stopped.result)
        assert post.in_reply_to == created and repository.sender(stopped.result).login == "admin"
    lost_too_early = world.run("stop", {"record": world.run("create", {"objective": "o", "budget": WALL}).result, "lost": True})
    assert lost_too_early.stopped.field == "lost"


def test_post(world):
    answer = world.run("post", {"to": world.thread[:10], "text": "An answer."}, login="bob")
    assert answer.stopped is None
    with world.served.repository() as repository:
        post = repository.post(answer.result)
        assert post.root == world.thread and post.body.strip() == "An answer."
        assert repository.sender(answer.result).login == "bob"
    before = world.snapshot()
    assert world.run("post", {"to": world.thread, "text": "x", "dry_run": True}, login="bob").stopped is None
    assert world.run("post", {"to": world.checkin, "text": "x", "dry_run": True}).stopped.field == "to"
    assert world.run("post", {"to": world.thread, "text": "x", "dry_run": True}, login="dave").stopped.field == "caller"
    assert world.run("post", {"to": world.thread, "text": "", "dry_run": True}).stopped.field == "text"
    assert world.snapshot() == before


def test_audit(world):
    raw = {"checkin": world.checkin[:10], "verdict": "pass", "reason": "reads well", "against": "PLAN.md"}
    before = world.snapshot()
    assert world.run("audit", {**raw, "dry_run": True}, login="bob").stopped is None
    own = world.run("audit", {**raw, "dry_run": True}, login="alice")
    assert own.stopped.field == "checkin" and "own" in own.stopped.why
    assert world.run("audit", {**raw, "dry_run": True}, login="carol").stopped.field == "caller"
    assert world.run("audit", {**raw, "reason": "two\nlines", "dry_run": True}, login="bob").stopped.field == "reason"
    assert world.run("audit", {**raw, "against": "/etc/passwd", "dry_run": True}, login="bob").stopped.field == "against"
    assert world.run("audit", {**raw, "checkin": world.thread, "dry_run": True}, login="bob").stopped.field == "checkin"
    assert world.snapshot() == before
    done = world.run("audit", {**raw, "tag": "ci"}, login="bob")
    assert done.stopped is None, done.stopped
    with world.served.repository() as repository:
        changes = [c for c in repository.tag_history(world.checkin, ["ci"]) if c.artifact == done.result]
    assert [(c.value, c.sender.login) for c in changes] == [("pass: reads well (against PLAN.md)", "bob")]


def test_audit_refused_on_a_check_in_whose_u_card_names_the_caller(world):
    forged = world.served.commit("alice", "b.txt", "two\n", user_override="bob")
    answer = world.run("audit", {"checkin": forged, "verdict": "fail", "reason": "r", "against": "PLAN.md"}, login="bob")
    assert answer.stopped.field == "checkin"


def test_status(world):
    answer = world.run("status", {}, login="alice")
    result = answer.result
    with world.served.repository() as repository:
        assert result["node"] == repository.server_code
    assert result["login"] == "alice" and "i" in result["capabilities"]
    assert result["enforces"] == ["branch", "no_password", "own_thread"] and result["cpu_rate"] == 1.0
    no_node = world.run("status", {}, login="alice", on_node=False).result
    assert no_node["enforces"] == [] and no_node["on_node"] is False and no_node["node"] == result["node"]
    assert json.loads(answer.model_dump_json())["stopped"] is None


def test_push_refused_to_a_caller_that_is_no_run(world):
    answer = world.run("push", {"dry_run": True}, login="alice")
    assert answer.stopped.field == "caller"


def test_a_response_forged_by_a_non_admin_does_not_answer_the_record(world):
    created = world.run("create", {"objective": "o", "budget": WALL, "remote": False}).result
    with world.served.repository() as repository:
        code = repository.server_code
    forged = {"ocx": 1, "kind": "response", "node": code, "answers": created, "outcome": "exited", "note": "forged"}
    world.served.web("bob").reply(created, "```json\n" + json.dumps(forged) + "\n```\n")
    assert world.run("stop", {"record": created, "dry_run": True}).stopped is None  # still open

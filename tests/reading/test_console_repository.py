"""The console's readers (docs/console.md) on a real served repository: which records
are this node's and open, and their answers, exactly as `ocx activity`
reads them (C1, C4, D31), without the message models; what needs each
viewer; what each open record was given."""
from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from fossil.conftest import Served, start_served
from ocx.node.activity import read_activity
from ocx.reading.console import deliveries, needs_you, queue_of
from ocx.reading.console_messages import node_records

from .conftest import LOGINS, record_text

pytestmark = pytest.mark.fossil
NODE_USER = "ocx-node"


def fenced(message: dict, text: str = "A message.") -> str:
    return f"{text}\n\n```json\n{json.dumps(message)}\n```\n"


def session(node: str, objective: str, *, hears=("admin", "bob"), checkins=(), wall="2m") -> str:
    return fenced({"ocx": 1, "kind": "record", "node": node, "user": f"run-{secrets.token_hex(3)}", "runner": "claude",
                   "objective": objective, "checkins": list(checkins), "hears": list(hears), "remote": False,
                   "restrict": {}, "sandbox": {"network": True, "read_only": [], "read_write": []},
                   "budget": {"wall": wall, "memory": "1G"}})


def response(node: str, record: str, outcome: str, note: str) -> str:
    return fenced({"ocx": 1, "kind": "response", "node": node, "answers": record, "outcome": outcome, "note": note})


@dataclass
class World:
    served: Served
    node: str
    talking: str  # admin's open session, hearing admin and bob, watching dev
    refused: str  # admin's, answered refused
    exited: str  # admin's, answered exited: nothing to look at
    lost: str  # admin's, wall 1s, answered lost by admin once it had passed (D31)
    bobs_record: str  # bob holds no admin: never this node's (C1)
    edit: str  # an edit of `talking`'s post: never a message (D9)
    in_ticket: str  # admin's record in a ticket change, answered budget there
    ticket: str
    question: str  # bob asks in `talking`'s thread
    answered_question: str  # bob asks, alice replies
    refusal: str  # the refused response's post
    dev_checkin: str  # on dev after `talking`, by alice


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    served = start_served(tmp_path_factory.mktemp("console"), {**LOGINS, "mallory": "3"})  # her posts are held
    try:
        with served.repository() as repository:
            node = repository.server_code
        admin, bob, alice, mallory, node_user = (served.web(n) for n in ("admin", "bob", "alice", "mallory", NODE_USER))
        talking = admin.new_thread("OCX record: talking", session(node, "keep talking", checkins=["dev"]))
        refused = admin.new_thread("OCX record: refused", session(node, "refuse me"))
        refusal = node_user.reply(refused, response(node, refused, "refused", "runner: not offered"))
        exited = admin.new_thread("OCX record: exited", session(node, "just exit"))
        node_user.reply(exited, response(node, exited, "exited", "exit 0 after 1 second"))
        lost = admin.new_thread("OCX record: lost", session(node, "lose me", wall="1s"))
        with served.repository() as repository:
            received = repository.sender(lost).time
        while datetime.now(UTC) < received + timedelta(seconds=1.5):  # D31: only once its wall has passed
            time.sleep(0.1)
        admin.reply(lost, response(node, lost, "lost", "answered lost by admin"))
        bobs_record = bob.new_thread("OCX record: bob's", session(node, "bob may not ask"))
        edit = admin.edit(talking, session(node, "an edit asks nothing"))
        ticket = admin.new_ticket("A ticket record", "Records by ticket.")
        in_ticket = admin.ticket_change(ticket, session(node, "in a ticket"))
        node_user.ticket_change(ticket, response(node, in_ticket, "budget", "wall 2m reached"))
        question = bob.reply(talking, "Which directory should I look at?")
        answered_question = bob.reply(talking, "And which branch?")
        alice.reply(answered_question, "dev.")
        mallory.reply(talking, "Held for moderation: nobody sees this yet.")  # D28
        dev_checkin = served.commit("alice", "dev.txt", "work\n", branch="dev")
        yield World(served, node, talking, refused, exited, lost, bobs_record, edit, in_ticket, ticket, question,
                    answered_question, refusal, dev_checkin)
    finally:
        served.server.stop()


def test_open_records_and_their_answers_are_what_activity_reads(world) -> None:
    with world.served.repository() as repository:
        seen = node_records(repository, world.node, NODE_USER)
        activity = read_activity(repository, NODE_USER, latest=100)
    assert [r.hash for r in seen.open] == [entry.placed.hash for entry in activity.open] == [world.talking]
    assert {record: answer.hash for record, answer in seen.answers.items()} == {
        placed.message.answers: placed.hash for placed in activity.responses}
    assert {r.hash: a.outcome for r, a in seen.answered(10)} == {
        world.refused: "refused", world.exited: "exited", world.lost: "lost", world.in_ticket: "budget"}
    talking = seen.open[0]
    assert (talking.objective, talking.hears, talking.checkins, talking.limits.wall, talking.limits.memory) == (
        "keep talking", ("admin", "bob"), ("dev",), 120, 1 << 30)
    assert world.bobs_record not in {r.hash for r in seen.records} and world.edit not in {r.hash for r in seen.records}


def test_a_viewer_sees_questions_in_their_records_threads_and_their_records_ends(world) -> None:
    with world.served.repository() as repository:
        seen = node_records(repository, world.node, NODE_USER)
        mine = needs_you(repository, seen, "admin")
        bobs = needs_you(repository, seen, "bob")
    assert [q.post for q in mine.questions] == [world.question]
    assert mine.questions[0].sender == "bob" and "Which directory" in mine.questions[0].text
    assert [(e.record.hash, e.answer.outcome) for e in mine.ended] == [
        (world.in_ticket, "budget"), (world.lost, "lost"), (world.refused, "refused")]  # newest first; exited is not
    assert [(u.checkin.hash, u.record) for u in mine.unjudged] == [(world.dev_checkin, world.talking)]
    assert len(bobs) == 0  # bob sent no record of this node


def test_a_reply_to_an_end_or_a_time_in_the_address_marks_the_ends_before_it_seen(world) -> None:
    world.served.web("admin").reply(world.refusal, "Seen: I will add the runner page.")
    with world.served.repository() as repository:
        seen = node_records(repository, world.node, NODE_USER)
        replied = needs_you(repository, seen, "admin")
        later = needs_you(repository, seen, "admin", since=datetime.now(UTC))
    assert [e.record.hash for e in replied.ended] == [world.in_ticket, world.lost]
    assert replied.since == seen.answers[world.refused].placed.received
    assert later.ended == [] and [q.post for q in later.questions] == [world.question]


def test_a_counted_verdict_takes_a_checkin_off_needs_you(world) -> None:
    world.served.clone("bob").tag(world.dev_checkin, "audited", "pass: reads well (against PLAN.md)")
    with world.served.repository() as repository:
        seen = node_records(repository, world.node, NODE_USER)
        assert needs_you(repository, seen, "admin").unjudged == []
        entries = queue_of(repository, "dev")
    assert entries[0].checkin == world.dev_checkin and [v.sender for v in entries[0].counted] == ["bob"]


def test_an_open_records_deliveries_are_the_posts_it_hears_and_its_checkins(world) -> None:
    with world.served.repository() as repository:
        seen = node_records(repository, world.node, NODE_USER)
        given = deliveries(repository, seen)[world.talking]
    # admin's edit and bob's two posts, all heard; mallory's is held (D28)
    # and alice is not heard; the dev check-in is alice's.
    heard = [p for p in world.served.repository().thread(world.talking)
             if p.sender.login in ("admin", "bob") and p.hash != world.talking and not p.pending_moderation]
    assert given.posts == len(heard) >= 3
    assert [c.hash for c in given.checkins] == [world.dev_checkin] and given.judged == frozenset()

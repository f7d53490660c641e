"""Releases of nodes elsewhere read on the server (D46, D48; node/releases/moves.py,
node/serving/release_facts.py): `status` on the server's node lists each node's release from its
node user's last accept or roll-back post; the server's node tells a node elsewhere the server's
last move and the node's own releases thread, each read with the served repository's senders
(F2), so a squatter's thread or an answer block posted by anybody else is never taken; its D25
gate refuses, naming `checkin`. Real `fossil server` and page, real logins."""
from __future__ import annotations

import secrets

import pytest

from ocx.fossil import admin
from ocx.fossil.web import WebSession
from ocx.node.server_link import ServerRefused
from ocx.protocol.release_request import render_answer, thread_title

RELEASE_A, RELEASE_B, RELEASE_C = "aa" * 8 + "-" + "01" * 8, "bb" * 8 + "-" + "02" * 8, "cc" * 8 + "-" + "03" * 8


def answer(step: str, outcome: str, release: str, checkin: str) -> str:
    facts = {"step": step, "outcome": outcome, "release": release, "checkin": checkin, "node_name": "x"}
    return render_answer(facts, f"Release {release} {outcome}.")


def as_user(site, login: str) -> WebSession:
    if login not in site.served.passwords:
        site.served.passwords[login] = admin.create_user(site.served.path, login, "4", f"{login}@example.org",
                                                         home=site.served.home)
    return site.served.web(login)


def test_status_and_a_node_elsewhere_read_each_node_users_last_move_never_anothers(site):
    from ocx.tools.caller import Caller
    from ocx.tools.framework import run_tool
    from ocx.tools.registry import TOOLS

    server, server_user = site.node.name, site.node.node_user
    link = site.register("relme")
    assert link.releases()["server"] == {"name": server, "node_user": server_user, "move": None}
    assert link.releases()["thread"] is None
    # A squatter's thread of the server's title first, with an accept block in it: not the server's.
    site.served.web("alice").new_thread(thread_title(server), answer("accept", "accepted", RELEASE_C, "c" * 40))
    server_web = as_user(site, server_user)
    root = server_web.new_thread(thread_title(server), answer("stage", "staged as next", RELEASE_A, "a" * 40))
    accepted = server_web.reply(root, answer("accept", "accepted", RELEASE_A, "a" * 40))
    server_web.reply(root, answer("stage", "refused", RELEASE_B, "b" * 40))  # moves nothing
    site.served.web("admin").reply(root, answer("accept", "accepted", RELEASE_C, "c" * 40))  # not the node user
    move = link.releases()["server"]["move"]
    assert move == {"post": accepted, "step": "accept", "release": RELEASE_A, "checkin": "a" * 40}
    # The node elsewhere's own thread, started by its node user (as `ocx release` there does), then a roll-back.
    node_web = site.served.web("ocx-node-relme")
    own = node_web.new_thread(thread_title("relme"), answer("accept", "accepted", RELEASE_B, "b" * 40))
    node_web.reply(own, answer("rollback", "rolled back", RELEASE_A, "a" * 40))
    assert link.releases()["thread"] == own
    site.register("relnone")  # never moved a release
    with Caller("alice", site.served.path, site.served.base_url, node=site.node,
                password=site.served.passwords["alice"]) as caller:
        nodes = {n["name"]: n for n in run_tool(TOOLS["status"], {}, caller).result["nodes"]}
    assert nodes[server]["release"] == RELEASE_A and nodes[server]["here"]
    assert nodes["relme"]["release"] == RELEASE_A  # its roll-back is its last move
    assert nodes["relnone"]["release"] is None
    with pytest.raises(ServerRefused):
        site.link("alice").releases()  # a person is told nothing


def test_the_gate_a_node_elsewhere_asks_refuses_naming_the_checkin(site):
    link = site.register("relgate")
    checkin = site.served.commit("bob", "gate.txt", "x\n")
    with pytest.raises(ServerRefused) as refused:
        link.gate(checkin)
    assert refused.value.field == "checkin" and "no counted ci verdict" in refused.value.why
    for bad in ("xyz", checkin[:6], checkin.upper()):
        with pytest.raises(ServerRefused) as refused:
            link.gate(bad)
        assert refused.value.field == "checkin"


def request_text(step: str, node: str) -> str:
    return f'Please.\n\n```json\n{{"ocx_release": "{step}", "node": "{node}"}}\n```\n'


def test_a_node_elsewhere_is_told_the_requests_in_its_thread_with_the_served_senders(site):
    """D46, D37: the node elsewhere's clone would name its own node user the sender of every post;
    the server's node reads each waiting post with its sender's letters now."""
    from ocx.node.releases.thread import asked_from

    code = secrets.token_hex(20)
    link = site.register("relreq", code)
    assert link.release_requests() == {"thread": None, "requests": []}
    root = site.served.web("admin").new_thread(thread_title("relreq"), request_text("rollback", code))
    by_alice = site.served.web("alice").reply(root, request_text("accept", code))
    other = site.served.web("admin").reply(root, request_text("accept", "0" * 40))
    talk = site.served.web("alice").reply(root, "When?")
    answered = site.served.web("admin").reply(root, request_text("accept", code))
    site.served.web("ocx-node-relreq").reply(answered, answer("accept", "accepted", RELEASE_A, "a" * 40))
    told = link.release_requests()
    assert told["thread"] == root
    read = dict(asked_from(item) for item in told["requests"])
    assert list(read) == [root, by_alice, other, talk]  # in order received; the answered one is not waiting
    assert read[root].request.ocx_release == "rollback" and read[root].sender == "admin"
    assert read[by_alice].refused.field == "caller" and read[by_alice].sender == "alice"
    assert read[other].refused.field == "node" and read[talk] is None
    post, again = asked_from(link.release_request(root))
    assert post == root and again.request.ocx_release == "rollback"
    with pytest.raises(ServerRefused) as refused:
        link.release_request("0" * 64)
    assert refused.value.field == "post"
    with pytest.raises(ServerRefused):
        site.link("alice").release_requests()


def test_a_servers_answer_about_a_request_is_read_as_bytes():
    from ocx.node.releases.thread import asked_from
    from ocx.protocol.errors import FieldError

    for bad in (None, [], {"post": "../x"}, {"post": "A" * 64}):
        with pytest.raises(FieldError) as refused:
            asked_from(bad)
        assert refused.value.field == "post"
    post = "b" * 64
    assert asked_from({"post": post, "talk": True}) == (post, None)
    request = {"ocx_release": "accept", "node": "c" * 40, "force": 1}
    forged = asked_from({"post": post, "sender": 7, "request": request})[1]
    assert forged.sender is None and forged.request is None and forged.refused.field == "force"

"""The server's node answers nodes elsewhere through its page (D36-D38), on
a real `fossil server` with real logins: registration by an admin only, the
receipts with their senders as the server knows them, held open until
something arrives, a record's answer, and run users granted, withdrawn and
kept to one node."""
from __future__ import annotations

import json
import secrets
import threading
import time

import pytest

from ocx.fossil.web import WebSession
from ocx.node.server_link import ServerLink, ServerRefused
from ocx.page.receipts import WAIT_MOST
from ocx.node.serving.registry import MARK
from ocx.run_steps.prepare import RUN_USER_CAPABILITIES


def test_only_an_admin_registers_a_node_and_its_user_holds_only_what_its_writes_need(site):
    node = site.register("build1")
    with site.served.repository() as repository:
        user = repository.user("ocx-node-build1")
    assert sorted(user.capabilities) == sorted("24cgir")  # D37: never a, s or p
    assert user.contact.startswith(MARK) and '"name": "build1"' in user.contact
    assert node.receipts(0)["receipts"]  # it may ask
    with pytest.raises(ServerRefused) as refused:
        site.link("alice").register("build2", "ocx-node-build2", None, [], password=True)
    assert refused.value.field == "caller"
    with pytest.raises(ServerRefused) as clash:  # another login for a registered name
        site.link("admin").register("build1", "someone-else", None, [], password=True)
    assert clash.value.field == "name"
    with pytest.raises(ServerRefused) as person:  # a person's login is never made a node user
        site.link("admin").register("build3", "alice", None, [], password=True)
    assert person.value.field == "node_user"


def test_receipts_name_the_sender_the_server_recorded_never_a_u_card(site):
    node = site.register("senders")
    since = node.receipts(0)["last"]
    # bob pushes a check-in whose U card names the admin.
    checkin = site.served.commit("bob", "forged.txt", "x\n", user_override="admin")
    answer = node.receipts(since)
    found = [(r["sender"], a[0]) for r in answer["receipts"] for a in r["artifacts"]]
    assert ("bob", checkin) in found
    assert "a" not in answer["capabilities"]["bob"] and "s" not in answer["capabilities"]["bob"]
    assert "i" in answer["capabilities"]["bob"]


def test_a_person_or_an_unregistered_login_is_told_nothing(site):
    with pytest.raises(ServerRefused) as refused:
        site.link("alice").receipts(0)
    assert refused.value.field == "caller"


def test_a_held_request_answers_as_soon_as_something_arrives(site):
    node = site.register("waiter")
    since = node.receipts(0)["last"]
    answered: dict = {}

    def wait() -> None:
        started = time.monotonic()
        answered["answer"] = node.receipts(since, wait=WAIT_MOST)
        answered["at"] = time.monotonic()
        answered["waited"] = answered["at"] - started

    waiting = threading.Thread(target=wait)
    waiting.start()
    time.sleep(1.0)  # the request is being held; nothing arrived yet
    assert "answer" not in answered
    post = site.served.web("alice").new_thread("hello", "something arrives")
    waiting.join(WAIT_MOST + 15)
    assert post in [a[0] for r in answered["answer"]["receipts"] for a in r["artifacts"]]
    # Woken by the arrival, not by its hold's end: no figure of how fast (a busy machine posts slowly).
    assert 1.0 <= answered["waited"] < WAIT_MOST - 5, answered["waited"]


def test_an_answer_of_receipts_carries_the_facts_of_each_record_naming_the_node_when_asked(site):
    code = secrets.token_hex(20)
    node = site.register("carried", code)
    since = node.receipts(0)["last"]
    mine, user = site.record(code)
    other, _ = site.record(secrets.token_hex(20))  # a record for another node
    chat = site.served.web("alice").new_thread("chat", "no record")
    answer = node.receipts(since, facts=True)
    posted = [a[0] for r in answer["receipts"] for a in r["artifacts"]]
    assert {mine, other, chat} <= set(posted)
    assert list(answer["records"]) == [mine]  # only its own records, each as `record` answers it
    assert answer["records"][mine] == node.record(mine)
    assert answer["records"][mine]["login"] == user and answer["records"][mine]["answer"] is None
    assert "records" not in node.receipts(since)  # only when asked


def test_a_held_request_with_nothing_arriving_ends_empty_at_its_wait(site):
    node = site.register("quiet")
    since = node.receipts(0)["last"]
    started = time.monotonic()
    answer = node.receipts(since, wait=2)
    assert answer["receipts"] == [] and answer["last"] == since
    # Held for its own wait, not for the longest hold: no figure of how fast a busy machine answers.
    assert 1.9 <= time.monotonic() - started < WAIT_MOST


def test_a_grant_gives_the_records_user_d19s_letters_and_a_password_only_in_the_answer(site):
    code = secrets.token_hex(20)
    node = site.register("granted", code)
    record, user = site.record(code)
    login, password = node.grant(record)
    assert login == user
    with site.served.repository() as repository:
        row = repository.user(user)
    assert sorted(row.capabilities) == sorted(RUN_USER_CAPABILITIES)
    assert code in row.contact  # D37: it works for this node now
    WebSession(site.served.base_url, user, password)  # the password logs in
    with site.served.repository() as repository:  # in no artifact (D19)
        hashes = [row[0] for row in site.served.sql("SELECT uuid FROM blob WHERE size>=0")]
        assert not any(password.encode() in repository.artifact(h) for h in hashes)
    again, second = node.grant(record)  # a preparation tried again: a new password, the same letters
    assert again == user and second != password
    assert node.withdraw(record) == user
    with site.served.repository() as repository:
        assert repository.user(user).capabilities == ""


def test_the_node_s_processes_share_one_kept_session_and_its_token(site, tmp_path):
    """The follower, each pass and each run's preparation are processes of their own: each logs in
    only when no kept session answers, and asks for the token only when none is kept."""
    code = secrets.token_hex(20)
    site.register("kept", code)
    login, password = "ocx-node-kept", site.served.passwords["ocx-node-kept"]
    kept = tmp_path / "server-session.json"

    def link() -> ServerLink:
        return ServerLink(site.served.base_url, login, password, kept=kept)

    follower = link()
    follower.whoami()
    assert follower.requests == 2  # its login, then its question
    for requests in (2, 1):  # the first change asks for the token; later ones find it kept
        record, _ = site.record(code)
        a_pass, a_preparation = link(), link()
        a_pass.record(record)
        a_preparation.grant(record)
        assert (a_pass.requests, a_preparation.requests) == (1, requests)


def test_a_grant_is_refused_for_a_record_not_for_that_node_or_not_from_an_admin(site):
    code = secrets.token_hex(20)
    node = site.register("picky", code)
    other, _ = site.record(secrets.token_hex(20))
    with pytest.raises(ServerRefused) as elsewhere:
        node.grant(other)
    assert elsewhere.value.field == "record"
    by_alice, user = site.record(code, by="alice")
    with pytest.raises(ServerRefused) as not_admin:
        node.grant(by_alice)
    assert not_admin.value.field == "record"
    with site.served.repository() as repository:
        assert user not in [u.login for u in repository.users()]


def test_a_run_user_works_for_the_node_of_the_first_record_naming_it(site):
    first_code, second_code = secrets.token_hex(20), secrets.token_hex(20)
    first, second = site.register("first", first_code), site.register("second", second_code)
    user = f"shared-{secrets.token_hex(3)}"
    for_first, _ = site.record(first_code, user=user)
    for_second, _ = site.record(second_code, user=user)
    with pytest.raises(ServerRefused) as refused:  # the first record named it for the first node
        second.grant(for_second)
    assert refused.value.field == "user" and first_code[:12] in refused.value.why
    first.grant(for_first)
    first.withdraw(for_first)  # answered: it holds nothing now, and still works for the first
    with pytest.raises(ServerRefused):
        second.grant(for_second)
    with pytest.raises(ServerRefused) as withdraw:  # nor may the second take anything back from it
        second.withdraw(for_second)
    assert withdraw.value.field == "user"


def test_a_first_record_spelling_its_user_in_json_escapes_still_claims_it(site):
    """JSON may spell any letter as a \\u escape: the record still names the user, so it
    is still the first record naming it (D37), though its text holds no plain login."""
    first_code, second_code = secrets.token_hex(20), secrets.token_hex(20)
    first, second = site.register("escaped", first_code), site.register("plain", second_code)
    user = f"spelled-{secrets.token_hex(3)}"
    message = {"ocx": 1, "kind": "record", "node": first_code, "user": "@USER@", "runner": "command",
               "command": ["true"], "objective": "o", "checkins": ["trunk"], "hears": [], "remote": False,
               "restrict": {}, "sandbox": {"network": True, "read_only": [], "read_write": []},
               "budget": {"wall": "1m"}}
    escaped = "".join(f"\\u{ord(letter):04x}" for letter in user)
    body = "A record.\n\n```json\n" + json.dumps(message).replace("@USER@", escaped) + "\n```\n"
    for_first = site.served.web("admin").new_thread("record", body)
    for_second, _ = site.record(second_code, user=user)
    with pytest.raises(ServerRefused) as refused:
        second.grant(for_second)
    assert refused.value.field == "user" and first_code[:12] in refused.value.why
    assert first.grant(for_first)[0] == user


def test_a_login_holding_capabilities_or_a_node_user_is_never_a_run_user(site):
    code = secrets.token_hex(20)
    node = site.register("careful", code)
    for user in ("alice", "ocx-node-careful", "nobody"):
        record, _ = site.record(code, user=user)
        with pytest.raises(ServerRefused) as refused:
            node.grant(record)
        assert refused.value.field == "user", refused.value


def test_a_records_answer_is_read_from_the_served_repository(site):
    code = secrets.token_hex(20)
    node = site.register("answering", code)
    record, _ = site.record(code)
    assert node.answer(record)["answer"] is None
    response = ("Answer.\n\n```json\n{\"ocx\": 1, \"kind\": \"response\", \"node\": \"%s\", \"answers\": \"%s\", "
                "\"outcome\": \"exited\", \"note\": \"exit 0\"}\n```\n" % (code, record))
    site.served.web("alice").reply(record, response)  # not the node user: no answer (C4)
    assert node.answer(record)["answer"] is None
    WebSession(site.served.base_url, "ocx-node-answering", site.served.passwords["ocx-node-answering"]).reply(
        record, response)
    assert node.answer(record)["answer"]["outcome"] == "exited"
    with pytest.raises(ServerRefused):  # answered: its user acts no more
        node.grant(record)


def test_runner_pages_and_letters_as_the_server_knows_them(site):
    node = site.register("reader")
    site.served.clone("admin").write_wiki("sandbox/probe", '```json\n{"command": ["/bin/true"]}\n```\n')
    site.served.clone("alice").write_wiki("sandbox/probe", '```json\n{"command": ["/bin/false"]}\n```\n')
    page = node.runner_page("probe")
    assert page is not None and "/bin/true" in page["content"]  # alice's newer version does not count (D14)
    assert node.runner_page("nothing") is None
    users = node.users(["alice", "no-such-login"])
    assert users["users"]["alice"]["letters"] == "i4" and users["users"]["no-such-login"] is None
    assert "admin" in users["admins"] and "alice" not in users["admins"]


def test_status_on_the_servers_node_lists_every_node_and_when_it_was_heard_from(site):
    from ocx.tools.caller import Caller
    from ocx.tools.framework import run_tool
    from ocx.tools.registry import TOOLS

    code = secrets.token_hex(20)
    node = site.register("listed", code)
    site.register("silent")  # registered, never heard from
    node.receipts(0)
    with Caller("alice", site.served.path, site.served.base_url, node=site.node,
                password=site.served.passwords["alice"]) as caller:
        nodes = run_tool(TOOLS["status"], {}, caller).result["nodes"]
    assert nodes[0]["here"] and nodes[0]["server_code"] == site.server_code and nodes[0]["node_user"] == "ocx-node"
    listed = {n["name"]: n for n in nodes[1:]}
    assert listed["listed"]["server_code"] == code and listed["listed"]["heard"] is not None
    assert listed["listed"]["enforces"] == ["branch", "no_password", "own_thread"]
    assert listed["silent"]["heard"] is None and not listed["silent"]["here"]


def test_a_held_request_answers_when_someone_is_given_admin(site):
    from ocx.fossil import admin

    node = site.register("watcher")
    first = node.receipts(0)
    since, digest = first["last"], first["admins"]
    answered: dict = {}
    started = time.monotonic()
    waiting = threading.Thread(target=lambda: answered.update(node.receipts(since, wait=WAIT_MOST, admins=digest)))
    waiting.start()
    time.sleep(1.0)
    assert not answered
    admin.set_capabilities(site.served.path, "erin", "s", home=site.served.home)  # no artifact, no receipt
    try:
        waiting.join(WAIT_MOST + 15)
        assert answered["admins"] != digest and answered["receipts"] == []
        assert time.monotonic() - started < WAIT_MOST - 5  # woken by the change, not by its hold's end
    finally:
        admin.set_capabilities(site.served.path, "erin", "v", home=site.served.home)


def test_the_page_answers_what_the_server_s_modules_compute_from_the_served_repository(site):
    """The same questions asked in this process of page/receipts.py and serving/questions.py, on the
    served repository's file, and of the page over HTTP (where Fossil runs them as its ext program)."""
    from ocx.node.serving import questions, registry
    from ocx.page import receipts

    code = secrets.token_hex(20)
    node = site.register("inprocess", code)
    since = node.receipts(0)["last"]
    record, user = site.record(code)
    site.served.web("alice").new_thread("chat", "no record")
    over_http = node.receipts(since, facts=True)
    with site.served.repository() as repository:
        entry = registry.node_of_user(repository, "ocx-node-inprocess")
        assert entry is not None and entry.server_code == code
        here = receipts.receipts_answer(repository, since)
        facts = questions.facts_of_records(repository, entry, here["receipts"], repository.server_code)
        assert here["receipts"] == over_http["receipts"] and here["last"] == over_http["last"]
        assert facts == over_http["records"] and list(facts) == [record]
        assert facts[record] == questions.record_facts(repository, entry, record, repository.server_code)
        assert facts[record]["login"] == user and facts[record]["answer"] is None
        assert questions.answer_of(repository, entry, secrets.token_hex(32))["record"] is None  # no such record
        people = questions.users(repository, ["alice", user], repository.server_code, owners=True)
        assert people["users"]["alice"]["letters"] == "i4" and people["users"][user] is None
        assert people["works_for"][user] == code  # D37: the first record naming it is for this node
        assert questions.runner_page(repository, "no-such-runner") == {"page": None}


def test_audit_on_a_node_elsewhere_learns_who_sent_the_checkin_from_the_server(site, tmp_path):
    """D37, D25: the node elsewhere's clone names its node user the
    sender of everything it pulled, so `audit` there asks the server's node
    (D37) and refuses a caller's own check-in even when its U card names
    someone else (D25); a run on that node can then never audit its own."""
    from ocx.fossil.repository import Repository
    from ocx.fossil.sync import CallerClone
    from ocx.node.config import NodeConfig
    from ocx.tools.caller import Caller
    from ocx.tools.framework import run_tool
    from ocx.tools.registry import TOOLS

    node = site.register("auditor")
    checkin = site.served.commit("bob", "mine.txt", "x\n", user_override="alice")  # any U card a run writes
    assert node.sender(checkin) == "bob" and node.sender("0" * 64) is None
    with pytest.raises(ServerRefused) as refused:
        node.sender(checkin[:12])
    assert refused.value.field == "artifact"
    with pytest.raises(ServerRefused):
        site.link("alice").sender(checkin)  # a person is told nothing

    clone = CallerClone.create(tmp_path / "clone.fossil", site.served.base_url, "ocx-node-auditor",
                               site.served.passwords["ocx-node-auditor"], home=tmp_path / "home")
    with Repository(clone.path) as repository:
        assert repository.checkin(checkin).sender.login == "ocx-node-auditor"  # the clone cannot tell
    config = NodeConfig(name="auditor", repository=str(clone.path), url=site.served.base_url,
                        node_user="ocx-node-auditor", elsewhere=True)

    def audit(login: str) -> dict:  # the node user's link held, as its tool socket holds one: not root's files
        caller = Caller(login, clone.path, site.served.base_url, node=config, password=site.served.passwords[login],
                        server_link=node)
        raw = {"checkin": checkin, "verdict": "pass", "reason": "fine", "against": "mine.txt", "dry_run": True}
        return run_tool(TOOLS["audit"], raw, caller)

    own = audit("bob")
    assert own.stopped is not None and own.stopped.field == "checkin", own
    assert "bob sent check-in" in own.stopped.why and "never one's own (D25)" in own.stopped.why
    other = audit("erin")
    assert other.stopped is None, other
    assert any("sent by bob, not the caller's" in str(step) for step in other.log), other.log


def test_a_run_user_s_letters_are_withdrawn_though_the_record_s_sender_was_demoted_mid_run(site):
    """C5: taking back asks no one's current rights. Before, the page refused the withdrawal once the
    sender no longer held admin, and the run user kept D19's letters with the password its run saw."""
    from ocx.fossil import admin

    code = secrets.token_hex(20)
    node = site.register("demoted", code)
    sender = f"ada-{secrets.token_hex(3)}"
    site.served.passwords[sender] = admin.create_user(site.served.path, sender, "s", "", home=site.served.home)
    record, user = site.record(code, by=sender)
    node.grant(record)
    admin.set_capabilities(site.served.path, sender, "i", home=site.served.home)  # demoted while it runs
    assert node.withdraw(record) == user
    with site.served.repository() as repository:
        assert repository.user(user).capabilities == ""
    with pytest.raises(ServerRefused) as again:  # giving still asks: a demoted sender's record gets nothing
        node.grant(record)
    assert again.value.field == "record"

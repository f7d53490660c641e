"""D21: every kind of write reaches the server with its caller as SENDER
(rcvfrom), shown by SQL against the served repository, for two different
non-admin logins; a forged U card changes nothing the reader reports."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.fossil

CALLERS = ["alice", "bob"]


@pytest.mark.parametrize("login", CALLERS)
def test_new_thread_and_reply_are_sent_by_the_caller(served, login: str) -> None:
    web = served.web(login)
    root = web.new_thread(f"thread by {login}", f"hello from **{login}**")
    other = "bob" if login == "alice" else "alice"
    reply = served.web(other).reply(root, f"{other} answers")
    assert served.sender_by_sql(root) == (login, "127.0.0.1")
    assert served.sender_by_sql(reply) == (other, "127.0.0.1")
    with served.repository() as repo:
        assert repo.sender(root).login == login and repo.sender(reply).login == other
        assert repo.post(reply).in_reply_to == root


@pytest.mark.parametrize("login", CALLERS)
def test_tag_is_sent_by_the_caller(served, login: str) -> None:
    checkin = served.commit("alice", f"tagged-by-{login}.txt", "content\n")
    change = served.clone(login).tag(checkin, "audited", f"pass: fine (against PLAN.md)")
    assert served.sender_by_sql(change) == (login, "127.0.0.1")
    assert served.sql(
        "SELECT x.value FROM tagxref x JOIN tag t USING(tagid) JOIN blob b ON b.rid=x.rid"
        " WHERE t.tagname='sym-audited' AND b.uuid=?",
        (checkin,),
    ) == [("pass: fine (against PLAN.md)",)]


@pytest.mark.parametrize("login", CALLERS)
def test_ticket_change_is_sent_by_the_caller(served, login: str) -> None:
    ticket = served.web("alice").new_ticket(f"ticket for {login}", "opened by alice")
    change = served.web(login).ticket_change(ticket, f"{login} adds a line", {"status": "Review"})
    assert served.sender_by_sql(change) == (login, "127.0.0.1")
    # ticketchng's own view: tkt_user is the U card, the sender comes from rcvfrom.
    rows = served.sql(
        "SELECT c.tkt_user, u.login FROM ticketchng c JOIN blob b ON b.rid=c.tkt_rid"
        " JOIN rcvfrom r ON r.rcvid=b.rcvid JOIN user u ON u.uid=r.uid WHERE b.uuid=?",
        (change,),
    )
    assert rows == [(login, login)]
    with served.repository() as repo:
        changes = repo.ticket_changes(ticket)
    assert [c.sender.login for c in changes] == ["alice", login]
    assert changes[-1].hash == change and changes[-1].comment == f"{login} adds a line"
    assert ("status", "Review", False) in [(f.name, f.value, f.append) for f in changes[-1].fields]
    # The web edit only writes what changed (an unset select stays unset).
    assert "priority" not in [f.name for f in changes[-1].fields]


def test_forged_user_on_a_checkin_does_not_change_its_sender(served) -> None:
    checkin = served.commit("alice", "forged.txt", "not mallory\n", user_override="mallory")
    assert served.sql("SELECT e.user FROM event e JOIN blob b ON b.rid=e.objid WHERE b.uuid=?", (checkin,)) == [
        ("mallory",)
    ]
    assert served.sender_by_sql(checkin)[0] == "alice"
    with served.repository() as repo:
        info = repo.checkin(checkin)
    assert (info.user, info.sender.login, info.branch) == ("mallory", "alice", "trunk")


def test_forged_user_on_a_tag_does_not_change_its_sender(served) -> None:
    checkin = served.commit("bob", "tag-forged.txt", "x\n")
    change = served.clone("alice").tag(checkin, "ci", "fail: forged (against PLAN.md)", user_override="mallory")
    with served.repository() as repo:
        history = repo.tag_history(checkin, names=["ci"])
    assert [(h.user, h.sender.login, h.artifact) for h in history] == [("mallory", "alice", change)]
    assert served.sender_by_sql(change)[0] == "alice"


def test_receipts_name_the_sender_and_what_arrived(served) -> None:
    with served.repository() as repo:
        before = repo.max_rcvid()
    root = served.web("bob").new_thread("receipt", "counted")
    checkin = served.commit("alice", "receipt.txt", "counted\n")
    with served.repository() as repo:
        receipts = repo.receipts_since(before)
        assert repo.max_rcvid() == receipts[-1].rcvid > before
    by_hash = {a.hash: (r.sender, a.event_type) for r in receipts for a in r.artifacts}
    assert by_hash[root] == ("bob", "f")
    assert by_hash[checkin] == ("alice", "ci")
    # The check-in's file travelled in the same receipt, with no event of its own.
    assert any(kind is None and sender == "alice" for sender, kind in by_hash.values())


def test_ticket_append_by_sync_is_read_as_an_append(served) -> None:
    """`fossil ticket change ID +comment TEXT` in a clone, pushed: the reader
    reports the appended comment and the pusher as sender."""
    from ocx.fossil.program import run_fossil

    ticket = served.web("alice").new_ticket("appended by sync", "first words")
    clone = served.clone("bob")
    clone.pull()
    run_fossil(["ticket", "change", ticket, "+comment", "more from bob", "-R", str(clone.path)],
               home=clone.home, user="bob")
    clone.push()
    with served.repository() as repo:
        last = repo.ticket_changes(ticket[:12])[-1]
    assert (last.comment, last.comment_appended, last.sender.login) == ("more from bob", True, "bob")
    assert served.sender_by_sql(last.hash)[0] == "bob"

"""Thread structure as the reader reports it: root, in_reply_to, edit_of, and
posts held for moderation (D9, D12, D28)."""
from __future__ import annotations

import pytest

from ocx.fossil.errors import WrongKind

pytestmark = pytest.mark.fossil


def test_thread_structure(served) -> None:
    alice, bob = served.web("alice"), served.web("bob")
    root = alice.new_thread("structure", "the root")
    first = bob.reply(root, "first reply")
    nested = alice.reply(first, "reply to the reply")
    edited = bob.edit(first, "first reply, edited")
    with served.repository() as repo:
        posts = {p.hash: p for p in repo.thread(nested)}  # any post names its thread
        assert set(posts) == {root, first, nested, edited}
        assert all(p.root == root for p in posts.values())
        assert (posts[root].in_reply_to, posts[root].edit_of, posts[root].title) == (None, None, "structure")
        assert posts[first].in_reply_to == root and posts[nested].in_reply_to == first
        assert posts[edited].edit_of == first and posts[edited].body == "first reply, edited"
        assert posts[edited].sender.login == "bob" and posts[nested].user == "alice"
        assert not any(p.pending_moderation for p in posts.values())
        assert posts[root].body == "the root" and posts[root].mimetype == "text/x-markdown"


def test_post_of_a_moderated_login_is_pending(served) -> None:
    held = served.web("carol").new_thread("held", "carol has 3, not 4")
    published = served.web("alice").new_thread("published", "alice has 4")
    assert served.sql("SELECT count(*) FROM private p JOIN blob b ON b.rid=p.rid WHERE b.uuid=?", (held,)) == [(1,)]
    with served.repository() as repo:
        assert repo.post(held).pending_moderation is True
        assert repo.post(held).sender.login == "carol"
        assert repo.post(published).pending_moderation is False
        assert repo.is_private(held) and not repo.is_private(published)
        receipt = [a for r in repo.receipts_since(0) for a in r.artifacts if a.hash == held]
    assert receipt and receipt[0].private is True


def test_a_checkin_is_not_a_post(served) -> None:
    checkin = served.commit("alice", "not-a-post.txt", "x\n")
    with served.repository() as repo:
        with pytest.raises(WrongKind):
            repo.post(checkin)
        with pytest.raises(WrongKind):
            repo.ticket_change(checkin)
        root = served.web("alice").new_thread("not a check-in", "x")
        with pytest.raises(WrongKind):
            repo.checkin(root)

"""Only a blob shaped as Fossil's forum form writes a post can be waiting for its crosslink
(manifest.is_form_post, Repository.unsettled). Anything else without an event row came by sync,
which crosslinks in the blob's own transaction: a run that pushes one must hold back nothing."""
from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fossil.test_manifest import sealed
from ocx.fossil.manifest import Artifact, Card, is_form_post, parse

ROOT = "a" * 64
REPLY = (("D", ("2026-12-05T02:41:13.123",)), ("G", (ROOT,)), ("I", (ROOT,)), ("N", ("text/x-markdown",)),
         ("U", ("alice",)), ("W", ("5",)), ("Z", ("0" * 32,)))


def post(cards) -> Artifact:
    return Artifact(tuple(Card(letter, args) for letter, args in cards), "hello")


def test_the_forms_shapes_are_posts():
    assert is_form_post(post(REPLY))
    root = [c for c in REPLY if c[0] not in "GI"]
    assert is_form_post(post(root[:1] + [("H", ("a\\stitle",))] + root[1:]))
    assert is_form_post(post(REPLY[:4] + (("P", ("b" * 40,)),) + REPLY[4:]))  # an edit of a reply


@given(st.data())
def test_any_change_to_a_forms_shape_is_no_post(data):
    cards = list(REPLY)
    change = data.draw(st.sampled_from(["drop", "twice", "swap", "date", "hash", "extra", "args"]))
    at = data.draw(st.integers(0, len(cards) - 1))
    if change == "drop":
        del cards[at if cards[at][0] != "N" else 0]  # N alone is optional
    elif change == "twice":
        cards.insert(at, cards[at])
    elif change == "swap":
        at = min(at, len(cards) - 2)
        cards[at], cards[at + 1] = cards[at + 1], cards[at]
    elif change == "date":
        cards[0] = ("D", (data.draw(st.sampled_from(["2026-13-05T02:41:13.123", "2026-12-05T02:41:13",
                                                     "2026-12-05 02:41:13.123", "2026-02-30T00:00:00.000"])),))
    elif change == "hash":
        cards[data.draw(st.sampled_from([1, 2]))] = ("G", (data.draw(st.sampled_from(["A" * 64, "a" * 63, "g" * 40])),))
    elif change == "extra":
        cards.insert(at, (data.draw(st.sampled_from("ABCEFHJKLMQRST")), ("x",)))
    else:
        cards[at] = (cards[at][0], cards[at][1] + ("more",)) if cards[at][0] in "DGINU" else cards[at]
        if cards == list(REPLY):
            return
    assert not is_form_post(post(cards))


@pytest.mark.fossil
def test_what_the_forum_form_writes_is_a_post(served):
    web = served.web("alice")
    root = web.new_thread("a title", "the root")
    reply = web.reply(root, "a reply")
    edited = web.edit(reply, "a reply, edited")
    with served.repository() as repo:
        for written in (root, reply, edited):
            assert is_form_post(parse(repo.artifact(written)))


@pytest.mark.fossil
def test_a_blob_pushed_by_sync_is_never_held(served):
    """What a run may push: `D`+`Z` (the attack that held every later receipt for a minute), a post
    Fossil refuses (a 13th month), one shaped unlike the form's (an upper-case root), and one it takes. None is unsettled once pushed."""
    web = served.web("alice")
    root = web.new_thread("pushed into", "a root")
    stamp = "2026-12-05T02:41:13.123"
    bodies = [
        f"D {stamp}\n",
        f"D 2026-13-05T02:41:13.123\nG {root}\nI {root}\nU alice\nW 3\nbad\n",
        f"D {stamp}\nG {root.upper()}\nI {root.upper()}\nU alice\nW 3\nbad\n",
        f"D {stamp}\nG {root}\nI {root}\nU alice\nW 4\ngood\n",
    ]
    artifacts = [sealed(body.encode()) for body in bodies]
    with served.repository() as repo:
        project_code = repo.project_code
    web.push_artifacts([(hashlib.sha3_256(a).hexdigest(), a) for a in artifacts], project_code)
    with served.repository() as repo:
        hashes = [hashlib.sha3_256(a).hexdigest() for a in artifacts]
        rcvid = repo.sender(hashes[0]).rcvid
        (receipt,) = [r for r in repo.receipts_since(rcvid - 1) if r.rcvid == rcvid]
        assert {a.hash for a in receipt.artifacts} >= set(hashes)
        assert repo.unsettled(receipt) == [] and repo.settled(receipt)
        # Fossil refused the first two and crosslinked the others at once (it takes an upper-case root,
        # which its form never writes): either way, nothing is left waiting.
        assert [repo.event_type(h) for h in hashes] == [None, None, "f", "f"]

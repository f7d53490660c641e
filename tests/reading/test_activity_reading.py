"""`ocx activity` reads only the posts that may be this node's messages
(ocx/reading/activity.py), and finds what reading every post finds: on a
real served repository, with a record whose `node` is spelled with JSON
escapes, chatter, and a record for another node."""
from __future__ import annotations

import json

import pytest

from ocx.fossil.repository import Repository
from ocx.node.activity import activity_json, read_activity
from ocx.reading.activity import NodeMessagesRepository

from .conftest import record_text
from .test_activity_repository import NODE_USER, response_text

pytestmark = pytest.mark.fossil


def escaped(text: str, node: str) -> str:
    """TEXT with NODE's every character as a JSON \\u escape: the same message to a JSON reader."""
    return text.replace(json.dumps(node), '"' + "".join(f"\\u{ord(c):04x}" for c in node) + '"')


def test_reading_only_posts_that_may_be_messages_finds_what_reading_all_finds(fresh) -> None:
    served, node = fresh
    admin = served.web("admin")
    plain = admin.new_thread("OCX record", record_text(node, ["dev"], "plain"))
    spelled = admin.new_thread("OCX record, escaped", escaped(record_text(node, ["dev"], "escaped"), node))
    admin.reply(plain, "Just talk, by an admin: no message here.")
    admin.new_thread("Elsewhere", record_text("ab" * 20, ["dev"], "another node"))
    answer = served.web(NODE_USER).reply(plain, response_text(node, plain, "exited", "exit 0"))
    with Repository(served.path) as repository:
        everything = read_activity(repository, NODE_USER)
        admin_posts = len(repository.forum_posts(["admin"]))
    with NodeMessagesRepository(served.path) as repository:
        shown = read_activity(repository, NODE_USER)
        decoded = len(repository.forum_posts(["admin"]))
    assert activity_json(shown) == activity_json(everything)
    assert [entry.placed.hash for entry in shown.open] == [spelled]
    assert [placed.hash for placed in shown.responses] == [answer]
    assert (admin_posts, decoded) == (4, 2)  # the chatter and the other node's record are never parsed

"""The node's releases thread read from a real repository (D46; ocx/node/releases/thread.py,
ocx/fossil/titled.py): only a thread the node user or an admin started is the node's; a request
from a login without admin or setup, for another node, or malformed is refused naming the field;
edits, talk and answered requests are not requests."""
from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ocx.fossil import admin
from ocx.fossil.titled import roots_titled
from ocx.node.releases.thread import read_request, releases_thread, unanswered
from ocx.protocol.release_request import render_answer, thread_title

NODE = "reln"


def request(step: str, node: str, **more) -> str:
    return f"Please.\n\n```json\n{json.dumps({'ocx_release': step, 'node': node, **more})}\n```\n"


def test_the_thread_is_the_first_an_admin_or_the_node_user_started(served):
    title = thread_title(NODE)
    code = served.repository().server_code
    squatted = served.web("alice").new_thread(title, request("accept", code))  # alice holds neither a nor s
    with served.repository() as repository:
        assert [r.hash for r in roots_titled(repository, title)] == [squatted]
        assert releases_thread(repository, NODE, "nodeuser") is None
    admin_thread = served.web("admin").new_thread(title, request("accept", code))
    with served.repository() as repository:
        assert releases_thread(repository, NODE, "nodeuser") == admin_thread
        assert releases_thread(repository, "other", "nodeuser") is None


def test_requests_read_from_the_thread_each_refused_naming_its_field(served):
    code = served.repository().server_code
    root = served.web("admin").new_thread(thread_title("reqs"), "Releases of reqs.")
    by_alice = served.web("alice").reply(root, request("rollback", code))
    other_node = served.web("admin").reply(root, request("rollback", "0" * 40))
    malformed = served.web("admin").reply(root, request("stage", code))  # no check-in
    unknown = served.web("admin").reply(root, request("accept", code, force=True))
    good = served.web("admin").reply(root, request("accept", code))
    talk = served.web("alice").reply(root, "When is the next release?")
    with served.repository() as repository:
        def refused(post: str) -> str:
            read = read_request(repository, post, code)
            assert read is not None and read.request is None
            return read.refused.field

        assert refused(by_alice) == "caller" and refused(other_node) == "node"
        assert refused(malformed) == "checkin" and refused(unknown) == "force"
        read = read_request(repository, good, code)
        assert read.refused is None and read.request.ocx_release == "accept" and read.sender == "admin"
        assert read_request(repository, talk, code) is None
        assert read_request(repository, root, code) is None  # the root post here is talk
        waiting = [p.hash for p in unanswered(repository, root, "admin")]
        assert waiting == [by_alice, talk]  # the node user's own posts are never requests (admin stands for it)


def test_a_request_the_node_user_answered_is_no_longer_waiting_and_an_edit_is_never_one(served):
    code = served.repository().server_code
    password = admin.create_user(served.path, "nodeuser", "4", "n@example.org", home=served.home)
    node_web = served.web("admin").__class__(served.base_url, "nodeuser", password)
    root = node_web.new_thread(thread_title("answered"), render_answer({"step": "stage"}, "Staged."))
    first = served.web("admin").reply(root, request("accept", code))
    second = served.web("admin").reply(root, request("rollback", code))
    edited = served.web("admin").edit(second, request("accept", code))
    node_web.reply(first, render_answer({"step": "accept", "outcome": "accepted"}, "Accepted."))
    with served.repository() as repository:
        assert releases_thread(repository, "answered", "nodeuser") == root
        assert [p.hash for p in unanswered(repository, root, "nodeuser")] == [second]
        assert edited not in [p.hash for p in unanswered(repository, root, "nodeuser")]


_TOLD_VALUES = st.one_of(st.none(), st.integers(), st.text(), st.from_regex(r"[0-9a-fA-F]{38,66}\n?", fullmatch=True))


@given(st.one_of(_TOLD_VALUES, st.dictionaries(st.one_of(st.just("answered"), st.text()), _TOLD_VALUES)))
def test_an_answer_told_by_the_server_is_taken_only_as_a_full_hash(told):
    """`answered` comes over the network (D37): anything but a post's full hash is no answer."""
    from ocx.node.releases.thread import answered_from

    found = answered_from(told)
    assert found is None or (isinstance(told, dict) and found == told["answered"] and len(found) in (40, 64)
                             and not set(found) - set("0123456789abcdef"))


@pytest.mark.parametrize("hash_", ["a" * 40, "0123456789abcdef" * 4])
def test_an_answer_told_by_the_server_as_a_full_hash_is_taken(hash_):
    from ocx.node.releases.thread import answered_from

    assert answered_from({"answered": hash_}) == hash_
    assert answered_from({"answered": hash_.upper()}) is None and answered_from({"answered": hash_[:-1]}) is None

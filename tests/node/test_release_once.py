"""A release request answered exactly once through kills (C4, D46; ocx/node/releases/once.py): what a
command killed at any step of accept, roll-back or stage leaves is read, after the root's recovery, as
the answer to post: the step done when the links hold what it makes, else lost with nothing moved."""
from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ocx.node.releases.announce import claim
from ocx.node.releases.links import LINKS, Releases
from ocx.node.releases.once import answered, became, begun, read_claim

from .test_releases import Cut, stage

REQUEST = "ab" * 32
STEPS = ("begun", "copy", "copied", "intent", *LINKS, "links", "moved")


def test_a_claim_says_how_far_its_command_got(tmp_path):
    releases = Releases(str(tmp_path))
    assert read_claim(str(tmp_path), REQUEST) is None
    assert claim(str(tmp_path), REQUEST) and not claim(str(tmp_path), REQUEST)  # acted on at most once
    assert read_claim(str(tmp_path), REQUEST) == {}  # claimed, nothing begun
    assert became("accept", {}, releases, None).done == "lost"
    begun(str(tmp_path), REQUEST, "accept", releases)
    assert read_claim(str(tmp_path), REQUEST) == {"step": "accept", "before": releases.links()}
    answered(str(tmp_path), REQUEST, "cd" * 32)
    assert read_claim(str(tmp_path), REQUEST) == {"answered": "cd" * 32}
    assert os.stat(tmp_path / "requests" / REQUEST).st_mode & 0o777 == 0o600


def test_a_claim_that_is_a_link_is_not_followed(tmp_path):
    (tmp_path / "requests").mkdir()
    (tmp_path / "elsewhere").write_text('{"answered": "x"}')
    (tmp_path / "requests" / REQUEST).symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError):
        read_claim(str(tmp_path), REQUEST)


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(["accept", "rollback"]), at=st.sampled_from(STEPS))
def test_a_request_killed_at_any_step_is_answered_with_what_became_of_it(tmp_path_factory, kind, at):
    root = tmp_path_factory.mktemp("releases")
    ready = Releases(str(root))
    first, second = stage(root, "1"), stage(root, "2")
    ready.offer(first)
    ready.accept()
    ready.offer(second)
    if kind == "rollback":
        ready.accept()
    before = ready.links()

    def cut(step: str) -> None:
        if step == at:
            raise Cut(step)

    releases = Releases(str(root), cut)
    assert claim(str(root), REQUEST)
    try:
        begun(str(root), REQUEST, kind, releases)
        releases.cut("begun")
        (releases.accept if kind == "accept" else releases.rollback)()
        releases.cut("moved")
    except Cut:
        pass
    after = Releases(str(root))
    after.recover()  # what the completing command does first, under the root's lock
    found = became(kind, read_claim(str(root), REQUEST) or {}, after, None)
    if after.links() == before:
        assert (found.done, found.release) == ("lost", None) and "nothing moved" in str(found.why)
    else:
        wanted = second if kind == "accept" else first
        assert after.links()["current"] == wanted
        assert (found.done, found.release) == ({"accept": "accepted", "rollback": "rolled back"}[kind], wanted)
    if at == "moved":
        assert found.done != "lost"  # moved before the kill: never said lost


def test_a_stage_killed_before_it_offered_is_lost_and_one_that_offered_is_staged(tmp_path):
    releases = Releases(str(tmp_path))
    first = stage(tmp_path, "1")
    checkin = releases.staged(first).checkin
    claimed = {"step": "stage", "before": releases.links()}
    found = became("stage", claimed, releases, checkin)
    assert found.done == "lost" and "nothing was offered" in str(found.why)
    releases.offer(first)  # the stage got as far as next before the kill
    found = became("stage", claimed, releases, checkin)
    assert (found.done, found.release) == ("staged as next", first)
    assert became("stage", claimed, releases, "0" * 64).done == "lost"  # another check-in's release is not its
    assert became("stage", {"step": "accept", "before": {}}, releases, checkin).done == "lost"  # not this step's


def test_an_answer_posted_before_a_kill_is_found_so_none_is_posted_twice(served):
    """The completion posts only when the thread holds no reply by the node user to the request (a real
    server and repository): another login's reply, or an answer to another request, is not its answer.
    A node elsewhere is told it by the server's node, which reads the served repository (D37)."""
    import json

    from ocx.fossil import admin
    from ocx.node.releases.thread import answer_to, answered_from
    from ocx.node.serving.registry import NodeEntry
    from ocx.node.serving.release_facts import request_of
    from ocx.protocol.release_request import render_answer, thread_title

    code = served.repository().server_code
    password = admin.create_user(served.path, "onceuser", "4", "o@example.org", home=served.home)
    node_web = served.web("admin").__class__(served.base_url, "onceuser", password)
    root = node_web.new_thread(thread_title("once"), "Releases of once.")
    block = "```json\n{}\n```\n"
    asked = served.web("admin").reply(root, block.format(json.dumps({"ocx_release": "accept", "node": code})))
    other = served.web("admin").reply(root, block.format(json.dumps({"ocx_release": "rollback", "node": code})))
    served.web("admin").reply(asked, "Any news?")  # a reply, not the node user's
    entry = NodeEntry("once", "onceuser", code)
    with served.repository() as repository:
        assert answer_to(repository, root, asked, "onceuser") is None
        told = request_of(repository, entry, asked)
        assert told["request"] == {"ocx_release": "accept", "node": code} and told["answered"] is None, told
    answer = node_web.reply(asked, render_answer({"step": "accept", "outcome": "lost"}, "Lost."))
    with served.repository() as repository:
        assert answer_to(repository, root, asked, "onceuser") == answer
        assert answer_to(repository, root, other, "onceuser") is None
        assert answer_to(repository, None, asked, "onceuser") is None  # no thread: nothing answered
        assert answered_from(request_of(repository, entry, asked)) == answer
        assert answered_from(request_of(repository, entry, other)) is None
        # the same node user's answer in another node's thread is not this one's: ENTRY's thread is read
        assert request_of(repository, NodeEntry("twice", "onceuser", code), asked)["answered"] is None

"""A node elsewhere's choice to follow the server's releases, and the server's answer read as bytes
from the network (D48; node/releases/following.py, moves.py): the choice is a file beside the
configuration (never a field of it: an older release reads that file with unknown fields refused),
read bounded and with no link followed; a move whose post, step, release or check-in is not of its
form is not taken."""
from __future__ import annotations

import json
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ocx.node.config import NodeConfig
from ocx.node.host_paths import configured_nodes
from ocx.node.releases.following import follows, server_move, set_following

POST, CHECKIN, RELEASE = "d" * 64, "e" * 40, "ee" * 8 + "-" + "ff" * 8


@pytest.fixture
def etc(tmp_path):
    return tmp_path


def node(elsewhere: bool = True) -> NodeConfig:
    return NodeConfig(name="far", repository="/nonexistent/clone.fossil", url="http://server:8080",
                      elsewhere=elsewhere)


def test_following_is_off_until_set_and_only_on_a_node_elsewhere(etc):
    assert not follows(node(), etc)
    path = set_following("far", True, etc)
    assert path == etc / "far.follow-releases" and follows(node(), etc) and not follows(node(elsewhere=False), etc)
    assert oct(os.stat(path).st_mode & 0o777) == "0o644"
    assert configured_nodes(str(etc)) == []  # never taken for a node's configuration (/etc/ocx/NAME.json)
    set_following("far", False, etc)
    assert not follows(node(), etc)


@pytest.mark.parametrize("text", ['{"follow_releases": "yes"}', "[true]", "not json", '{"follow_releases": 1}',
                                  '{"follow_releases": true, "pad": "' + "x" * 5000 + '"}'])
def test_a_malformed_or_oversized_choice_is_not_following(etc, text):
    (etc / "far.follow-releases").write_text(text)
    assert not follows(node(), etc)


def test_a_link_in_place_of_the_choice_is_not_followed(etc, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("other") / "yes.json"
    elsewhere.write_text(json.dumps({"follow_releases": True}))
    (etc / "far.follow-releases").symlink_to(elsewhere)
    assert not follows(node(), etc)


def test_the_servers_move_is_taken_with_each_value_of_its_form():
    answer = {"server": {"name": "srv", "node_user": "ocx-node",
                         "move": {"post": POST, "step": "accept", "release": RELEASE, "checkin": CHECKIN}},
              "thread": "a" * 64}
    found = server_move(answer)
    assert (found.server, found.node_user, found.thread) == ("srv", "ocx-node", "a" * 64)
    assert found.move is not None
    assert (found.move.post, found.move.step, found.move.checkin) == (POST, "accept", CHECKIN)
    bad_checkin = {"server": {"move": {"post": POST, "step": "rollback", "release": "../x", "checkin": "--all"}}}
    moved = server_move(bad_checkin).move
    assert moved is not None and moved.checkin is None and moved.release is None
    for post, step in (("../etc", "accept"), (POST.upper(), "accept"), (POST, "stage"), (POST, "delete")):
        assert server_move({"server": {"move": {"post": post, "step": step, "checkin": CHECKIN}}}).move is None


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=70),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner,
                                                                                 max_size=4), max_leaves=12))
def test_any_answer_reads_as_a_move_of_its_form_or_none(value):
    found = server_move({"server": {"move": value}, "thread": value} if not isinstance(value, dict) else value)
    if found.move is not None:
        assert len(found.move.post) in (40, 64) and found.move.step in ("accept", "rollback")
        assert found.move.checkin is None or len(found.move.checkin) in (40, 64)

"""A node elsewhere leaves the list (D36, D31, C5), on a real `fossil server` with real logins: a join
under a registered name is refused unless an admin said to replace it, and a node replaced or taken off
the list leaves no run user holding letters and its open records named, each with its D31 time."""
from __future__ import annotations

import secrets

import pytest

from ocx.node.elsewhere.link import LoginNotTaken, ServerRefused, join, join_answer
from ocx.node.serving import leaving, registry
from ocx.node.unit.prepare import RUN_USER_CAPABILITIES

from .test_joining import logins, made_on_the_page


def letters(site, login: str) -> str:
    with site.served.repository() as repository:
        return repository.user(login).capabilities


def running_record(site, name: str) -> tuple[str, str, str]:
    """Node NAME registered with a code, and a record for it whose user it was granted: (code, record, user)."""
    code = secrets.token_hex(20)
    node = site.register(name, code)
    record, user = site.record(code)
    node.grant(record)
    assert sorted(letters(site, user)) == sorted(RUN_USER_CAPABILITIES)
    return code, record, user


def test_a_join_under_a_registered_name_is_refused_unless_the_admin_said_to_replace_it(site):
    code, record, user = running_record(site, "taken-over")
    token, _ = made_on_the_page(site, "taken-over")
    users = logins(site)
    with pytest.raises(ServerRefused) as refused:
        join(site.served.base_url, token, "taken-over", "ocx-node-taken-over", None, [])
    assert refused.value.field == "name" and code in refused.value.why
    assert logins(site) == users  # its password not reset, its code kept: its open record can still be answered
    replacing = site.link("admin")._call("join-token", [], {"name": "taken-over", "replace": True}, None)
    answer = join_answer(site.served.base_url, replacing["join_token"], "taken-over", "ocx-node-taken-over", None, [])
    assert answer["password"] and answer["replaced"]["node"]["server_code"] == code
    assert answer["replaced"]["withdrawn"] == [user] and letters(site, user) == ""  # C5: nothing left writing
    assert [r["record"] for r in answer["replaced"]["open"]] == [record]  # named, with its D31 time
    with site.served.repository() as repository:
        assert registry.node_of_user(repository, "ocx-node-taken-over").server_code is None


def test_an_admin_s_register_replaces_a_registered_code_only_when_told(site):
    code, record, user = running_record(site, "reregistered")
    with pytest.raises(ServerRefused) as refused:
        site.link("admin").register("reregistered", "ocx-node-reregistered", secrets.token_hex(20), [], password=True)
    assert refused.value.field == "name"
    assert letters(site, user) != ""
    new = secrets.token_hex(20)
    answer = site.link("admin").register("reregistered", "ocx-node-reregistered", new, [], password=True, replace=True)
    assert answer["replaced"]["withdrawn"] == [user] and [r["record"] for r in answer["replaced"]["open"]] == [record]
    # The same host again, its own code: no replacement, nothing retired.
    again = site.link("admin").register("reregistered", "ocx-node-reregistered", new, [], password=True)
    assert again["replaced"] is None


def test_a_node_taken_off_the_list_keeps_no_letters_and_neither_do_its_run_users(site):
    code, record, user = running_record(site, "going")
    node = site.link("ocx-node-going")
    node.receipts(0)  # logged in
    left = leaving.remove(str(site.served.path), "going", home=site.served.home)
    assert left.withdrawn == (user,) and [r.hash for r in left.open] == [record]
    assert letters(site, user) == "" and letters(site, "ocx-node-going") == ""
    with site.served.repository() as repository:
        assert "going" not in [e.name for e in registry.elsewhere(repository)]
    # Its session, open before, is answered as no node's; its old password logs in no more (Fossil's 401):
    # a refusal its follower stops at, not a cut it would wait out.
    with pytest.raises(LoginNotTaken) as login:
        node.receipts(0)
    assert "401" in str(login.value)
    with pytest.raises(Exception) as unknown:
        leaving.remove(str(site.served.path), "going", home=site.served.home)
    assert getattr(unknown.value, "field", None) == "name"


def test_a_node_taken_off_the_list_comes_back_only_by_an_admin_s_word(site):
    site.register("returning")
    leaving.remove(str(site.served.path), "returning", home=site.served.home)
    token, _ = made_on_the_page(site, "returning")
    password = join(site.served.base_url, token, "returning", "ocx-node-returning", None, [])
    assert password and sorted(letters(site, "ocx-node-returning")) == sorted("24cgir")
    with site.served.repository() as repository:
        assert registry.node_of_user(repository, "ocx-node-returning").name == "returning"


def test_a_node_user_taken_off_the_list_is_never_granted_as_a_run_user(site):
    """D40: it holds no letters once removed, yet it is a node user still (it may join again)."""
    code = secrets.token_hex(20)
    node = site.register("granting", code)
    site.register("gone-by")
    leaving.remove(str(site.served.path), "gone-by", home=site.served.home)
    record, _ = site.record(code, user="ocx-node-gone-by")
    with pytest.raises(ServerRefused) as refused:
        node.grant(record)
    assert refused.value.field == "user" and letters(site, "ocx-node-gone-by") == ""

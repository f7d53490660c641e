"""Fossil's capability expansion: pure (capabilities.py), then checked against
what a real server lets each login do, and what the reader reports."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ocx.fossil import admin
from ocx.fossil.capabilities import effective_capabilities, expand, holds_admin
from ocx.fossil.web import WebError

DEFAULT_ROWS = {"nobody": "gjorz", "anonymous": "hmnc", "reader": "kptw", "developer": "ei"}
LETTERS = "abcdefghijklmnopqrstuvwxyz234567ACD"


def test_letters_that_imply_others() -> None:
    assert expand("w", {}) == set("wrnc")
    assert expand("i", {}) == set("io")
    assert expand("k", {}) == set("kjm")
    assert expand("6", {}) == set("65432") and expand("3", {}) == set("32")
    assert {"a", "i", "o", "4", "w", "k"} <= expand("a", {}) and "s" not in expand("a", {})
    assert expand("s", {}) == expand("a", {}) | {"s"}
    assert "x" not in expand("s", {}) and "y" not in expand("a", {})  # private, unversioned


def test_u_and_v_pull_in_reader_and_developer_rows() -> None:
    rows = {**DEFAULT_ROWS, "dave": "u", "erin": "v"}
    assert effective_capabilities("dave", rows) == set("kptw" + "jm" + "rnc" + "gjorz" + "hmnc")
    assert "i" in effective_capabilities("erin", rows) and "e" in effective_capabilities("erin", rows)
    assert "u" not in effective_capabilities("dave", rows)


def test_reader_row_that_names_u_does_not_loop() -> None:
    rows = {"reader": "u2", "developer": "vu", "x": "uv"}
    assert expand("uv", rows) == {"2"}


def test_nobody_gets_only_its_own_and_logins_get_anonymous_too() -> None:
    rows = {**DEFAULT_ROWS, "alice": ""}
    assert effective_capabilities("nobody", rows) == set("gjorz")
    assert effective_capabilities("alice", rows) == set("gjorz" + "hmnc")
    assert effective_capabilities("anonymous", rows) == set("gjorz" + "hmnc")
    with pytest.raises(KeyError):
        effective_capabilities("zed", rows)


def test_holds_admin() -> None:
    assert holds_admin(expand("s", {})) and holds_admin(expand("a", {}))
    assert not holds_admin(expand("i4w", {})) and not holds_admin(expand("u", {"reader": "kptw"}))
    assert holds_admin(expand("v", {"developer": "a"}))


@given(st.text(alphabet=LETTERS, max_size=12), st.text(alphabet=LETTERS, max_size=12))
def test_more_letters_never_grant_less(a: str, b: str) -> None:
    rows = {"reader": "kptw", "developer": "ei"}
    assert expand(a, rows) <= expand(a + b, rows)
    assert expand(a + b, rows) == expand(a, rows) | expand(b, rows)


# -- against a real server --------------------------------------------------------


@pytest.mark.fossil
def test_reader_reports_fossils_expansion(served) -> None:
    with served.repository() as repo:
        assert repo.user("alice").capabilities == "i4"
        assert repo.effective_capabilities("alice") == set("i4" + "o32" + "gjorz" + "hmnc")
        assert repo.effective_capabilities("dave") == set("kptw" + "jm" + "rnc" + "gjorz" + "hmnc")
        assert {"e", "i"} <= repo.effective_capabilities("erin")
        assert repo.effective_capabilities("nobody") == set("gjorz")
        assert repo.holds_admin("admin") and not repo.holds_admin("alice")
        # One read of the user table gives the same answer for every login (D24's check each pass).
        assert repo.admins() == {u.login for u in repo.users() if repo.holds_admin(u.login)}
        assert "admin" in repo.admins() and "alice" not in repo.admins()


@pytest.mark.fossil
def test_v_login_may_push_and_an_empty_login_may_not(served, tmp_path) -> None:
    # erin's own row is just `v`: Fossil lets her push because developer holds `i`.
    checkin = served.commit("erin", "erin.txt", "from erin\n")
    assert served.sender_by_sql(checkin)[0] == "erin"
    # carol (`3`, no `i`) is refused by the server.
    from ocx.fossil.fossil_failure import FossilError

    with pytest.raises(FossilError):
        served.commit("carol", "carol.txt", "from carol\n")
    assert not served.sql("SELECT 1 FROM event WHERE comment LIKE 'carol.txt%'")


@pytest.mark.fossil
def test_u_follows_the_reader_row_as_it_changes(served) -> None:
    """dave's `u` gives what `reader` holds now: with reader given `4`, dave's
    post is published; Fossil and the reader agree."""
    admin.set_capabilities(served.path, "reader", "kptw4", home=served.home)
    try:
        with served.repository() as repo:
            assert "4" in repo.effective_capabilities("dave")
        post = served.web("dave").new_thread("from dave", "reader's letters")
        with served.repository() as repo:
            assert repo.post(post).pending_moderation is False
    finally:
        admin.set_capabilities(served.path, "reader", "kptw", home=served.home)
    with served.repository() as repo:
        assert "2" not in repo.effective_capabilities("dave")
    with pytest.raises(WebError):
        served.web("dave").new_thread("again", "no forum letters now")  # no /forume1 form

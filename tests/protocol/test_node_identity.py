"""A node's identity as it enters the server's list (D29, D36, D37): pure checks, one place for every way in."""
from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from ocx.protocol.errors import FieldError
from ocx.protocol.node_identity import Claimed, check_identity, check_login, check_name

OWN_CODE, OWN_USER = "a" * 40, "ocx-node"
OTHER = Claimed("build1", "ocx-node-build1", "b" * 40)


def refused(name="build2", login="ocx-node-build2", code="c" * 40, others=(OTHER,)) -> str:
    with pytest.raises(FieldError) as caught:
        check_identity(name, login, code, own_code=OWN_CODE, own_node_user=OWN_USER, others=others)
    return caught.value.field


def test_a_new_node_with_an_identity_of_its_own_is_taken():
    check_identity("build2", "ocx-node-build2", "c" * 40, own_code=OWN_CODE, own_node_user=OWN_USER, others=[OTHER])
    check_identity("build2", "ocx-node-build2", None, own_code=OWN_CODE, own_node_user=OWN_USER, others=[OTHER])


def test_the_served_repository_s_own_server_code_or_node_user_is_never_a_node_elsewhere_s():
    assert refused(code=OWN_CODE) == "server_code"
    assert refused(login=OWN_USER) == "node_user"
    assert refused(login="OCX-Node") == "node_user"  # Fossil's logins differ by case: a reader's eye does not


def test_another_registered_node_s_name_code_or_login_is_refused_and_its_own_registration_is_not_another():
    assert refused(code="b" * 40) == "server_code"
    assert refused(name="BUILD1") == "name"
    assert refused(login="OCX-NODE-BUILD1") == "node_user"
    check_identity("build1", "ocx-node-build1", "d" * 40, own_code=OWN_CODE, own_node_user=OWN_USER, others=[OTHER])


@pytest.mark.parametrize("login", ["ocx\u2011node", "ocx-node/../join-tokens/x", "a/b", "../x", ".hidden", "",
                                   "nobody", "Anonymous", "x" * 65, "ocx-node\n", "ocx node", "\u0430dmin"])
def test_a_node_user_is_held_to_the_login_rules(login):
    with pytest.raises(FieldError) as caught:
        check_login(login)
    assert caught.value.field == "node_user"


@pytest.mark.parametrize("code", ["A" * 40, "a" * 39, "a" * 41, "\u0661" * 40, "a" * 40 + "\n", 7])
def test_a_server_code_is_a_clone_s_and_only_that(code):
    assert refused(code=code) == "server_code"


@given(st.text(min_size=1, max_size=70))
def test_any_name_or_login_taken_is_plain_ascii_with_no_path_in_it(text):
    for check in (check_name, check_login):
        try:
            check(text)
        except FieldError:
            continue
        assert text.isascii() and text.isprintable() and "/" not in text and not text.startswith(".")
        assert text == text.strip()

"""A node's identity is its own (D29, D36, D37), on a real `fossil server` with real logins: no way in
(an admin's register, a join token's join, a node user's code) takes the served repository's own
server-code or node user, or a login outside the login rules, and no file name is made of a login."""
from __future__ import annotations

import secrets

import pytest

from ocx.fossil import admin
from ocx.node.elsewhere.link import ServerLink, ServerRefused, join
from ocx.node.serving import join_tokens, registry

from .test_joining import kept, logins, made_on_the_page


def test_a_join_naming_the_server_s_own_server_code_is_refused_and_spends_nothing(site):
    token, _ = made_on_the_page(site, "thief")
    before, users = kept(site), logins(site)
    with pytest.raises(ServerRefused) as refused:
        join(site.served.base_url, token, "thief", "ocx-node-thief", site.server_code, [])
    assert refused.value.field == "server_code" and "own server-code" in refused.value.why
    assert kept(site) == before and logins(site) == users  # no login made, the token not spent


def test_a_joined_node_user_cannot_name_the_server_s_code_as_its_clone_s(site):
    token, _ = made_on_the_page(site, "later-thief")
    password = join(site.served.base_url, token, "later-thief", "ocx-node-later-thief", None, [])
    node = ServerLink(site.served.base_url, "ocx-node-later-thief", password)
    with pytest.raises(ServerRefused) as refused:
        node.name_code(site.server_code)
    assert refused.value.field == "server_code"
    with site.served.repository() as repository:
        assert registry.node_of_user(repository, "ocx-node-later-thief").server_code is None


def test_an_admin_cannot_register_the_server_s_code_or_node_user_for_a_node_elsewhere_either(site):
    with pytest.raises(ServerRefused) as code:
        site.link("admin").register("mirror", "ocx-node-mirror", site.server_code, [], password=True)
    assert code.value.field == "server_code"
    with pytest.raises(ServerRefused) as user:
        site.link("admin").register("mirror", "OCX-NODE", secrets.token_hex(20), [], password=True)
    assert user.value.field == "node_user"


@pytest.mark.parametrize("login", ["ocx\u2011node", "join-tokens/x", "../x", "ocx-node-\u0430"])
def test_a_join_under_a_login_outside_the_login_rules_is_refused_and_writes_no_file(site, login):
    token, _ = made_on_the_page(site, "odd")
    directory = registry.nodes_dir(site.served.path)
    files = sorted(p.relative_to(directory) for p in directory.rglob("*"))
    users = logins(site)
    with pytest.raises(ServerRefused) as refused:
        join(site.served.base_url, token, "odd", login, None, [])
    assert refused.value.field == "node_user", refused.value
    assert logins(site) == users
    assert sorted(p.relative_to(directory) for p in directory.rglob("*")) == files


def test_a_node_s_last_request_is_kept_under_a_name_the_page_derives_never_its_login(site):
    node = site.register("heard-here")
    node.whoami()
    directory = registry.nodes_dir(site.served.path)
    assert not (directory / "ocx-node-heard-here.json").exists()
    assert registry.heard_file(site.served.path, "ocx-node-heard-here").exists()
    assert registry.heard(site.served.path, "ocx-node-heard-here") is not None
    assert join_tokens.tokens_dir(site.served.path).parent == directory  # tokens below, never a heard file's name


def test_a_registration_naming_the_server_s_code_made_before_these_checks_is_answered_as_no_node(site):
    """A host that joined under the server's code before every way in checked it: its node user is no
    node's, so it cannot obtain the password of a run of the server's own node (D29, D37)."""
    node = site.register("legacy")
    entry = registry.NodeEntry("legacy", "ocx-node-legacy", site.server_code, ())
    admin.set_contact(site.served.path, "ocx-node-legacy", registry.contact_text(entry), home=site.served.home)
    record, user = site.record(site.server_code)  # a record for the server's own node
    with pytest.raises(ServerRefused) as refused:
        node.grant(record)
    assert refused.value.field == "caller"
    with site.served.repository() as repository:
        assert user not in [u.login for u in repository.users()]

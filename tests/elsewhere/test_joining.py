"""A host joins as a node elsewhere with a join token an admin made on the server's page (D36), on a
real `fossil server` with real logins: made through the console's form by an admin only, kept only as
a hash, good once, for one name, for an hour; a wrong, used or expired one is refused naming what is
wrong, and writes nothing."""
from __future__ import annotations

import hashlib
import json
import secrets
import stat
import time

import pytest

from ocx.fossil.web import WebSession
from ocx.node.server_link import ServerRefused, ServerLink, join
from ocx.page import join_tokens

from .on_host import join_token_through_page

PAGE = "/ext/ocx"


def made_on_the_page(site, name: str, by: str = "admin") -> tuple[str | None, str]:
    """BY posts the console's join form for NAME: (the token it shows, or None; the page's HTML)."""
    return join_token_through_page(site.served.web(by), name)


def kept(site) -> dict[str, str]:
    """Every file the page keeps for join tokens: name -> text."""
    directory = join_tokens.tokens_dir(site.served.path)
    return {p.name: p.read_text() for p in directory.glob("*")} if directory.exists() else {}


def logins(site) -> list[tuple]:
    return site.served.sql("SELECT login, cap, info, pw FROM user ORDER BY login")


def test_an_admin_makes_one_on_the_page_and_a_host_joins_with_it_once(site):
    made_after = time.time()
    token, page = made_on_the_page(site, "joiner")
    made_before = time.time()
    assert token is not None and token.startswith("ocxjoin-"), page[-2000:]
    # Kept only as its hash, 0600, in the page's own directory: the token itself nowhere on the server.
    path = join_tokens.tokens_dir(site.served.path) / (hashlib.sha256(token.encode()).hexdigest() + ".json")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert all(token not in text for text in kept(site).values())
    record = json.loads(path.read_text())
    assert record["name"] == "joiner" and record["by"] == "admin" and record["used"] is None
    assert made_after - 1 <= record["made"] <= made_before + 1  # made by this request (the page's clock)
    assert record["expires"] - record["made"] == 3600  # good for an hour
    with site.served.repository() as repository:
        assert not any(token.encode() in repository.artifact(h) for (h,) in site.served.sql("SELECT uuid FROM blob "
                                                                                              "WHERE size>=0"))
    password = join(site.served.base_url, token, "joiner", "ocx-node-joiner", None, ["branch"])
    with site.served.repository() as repository:
        user = repository.user("ocx-node-joiner")
    assert sorted(user.capabilities) == sorted("24cgir")  # D37: the same letters as an admin's registration
    assert '"name": "joiner"' in user.contact and '"server_code": null' in user.contact
    node = ServerLink(site.served.base_url, "ocx-node-joiner", password)
    code = secrets.token_hex(20)
    assert node.name_code(code) == {"node": "joiner", "server_code": code}  # its clone's, once
    assert node.whoami()["node"]["server_code"] == code
    with pytest.raises(ServerRefused) as again:  # changing it takes an admin
        node.name_code(secrets.token_hex(20))
    assert again.value.field == "server_code"
    assert json.loads(path.read_text())["used"] is not None
    # A second use: refused as used, and nothing is written.
    before, users = kept(site), logins(site)
    with pytest.raises(ServerRefused) as used:
        join(site.served.base_url, token, "joiner", "ocx-node-joiner", None, [])
    assert used.value.field == "join_token" and "was used at" in used.value.why
    assert kept(site) == before and logins(site) == users  # its password not reset either


def test_only_an_admin_makes_one(site):
    before = kept(site)
    token, page = made_on_the_page(site, "by-alice", by="alice")
    assert token is None and "holds neither admin nor setup" in page
    assert kept(site) == before
    with pytest.raises(ServerRefused) as refused:  # the page's JSON door says the same
        site.link("alice")._call("join-token", [], {"name": "by-alice"}, None)
    assert refused.value.field == "caller"
    assert kept(site) == before


def test_a_form_without_the_page_s_token_makes_none(site):
    before = kept(site)
    web = site.served.web("admin")
    page = web.post(PAGE, {"form": "join-token", "token": "0" * 64, "name": "forged"}).text
    assert "no valid token (D43)" in page and kept(site) == before


def test_a_wrong_expired_or_other_name_token_is_refused_naming_it_and_writes_nothing(site):
    token, _ = made_on_the_page(site, "later")
    other, _ = made_on_the_page(site, "elsewhere-one")
    before, users = kept(site), logins(site)

    def refused(given: str, name: str) -> ServerRefused:
        with pytest.raises(ServerRefused) as caught:
            join(site.served.base_url, given, name, f"ocx-node-{name}", None, [])
        assert kept(site) == before and logins(site) == users
        return caught.value

    wrong = refused("ocxjoin-" + secrets.token_urlsafe(32), "later")
    assert wrong.field == "join_token" and "made no such join token" in wrong.why
    assert refused("hunter2", "later").field == "join_token"
    for_another = refused(other, "later")
    assert for_another.field == "name" and "'elsewhere-one'" in for_another.why
    # An hour later (its record's expiry moved back, as the page's clock would see it):
    path = join_tokens.tokens_dir(site.served.path) / (hashlib.sha256(token.encode()).hexdigest() + ".json")
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "expires": time.time() - 1}))
    before = kept(site)
    expired = refused(token, "later")
    assert expired.field == "join_token" and "expired at" in expired.why


def test_a_join_never_takes_a_person_s_login_or_another_node_s_name(site):
    site.register("taken")
    token, _ = made_on_the_page(site, "taken")
    with pytest.raises(ServerRefused) as clash:  # the name is registered to another node user
        join(site.served.base_url, token, "taken", "ocx-node-other", None, [])
    assert clash.value.field == "name"
    alice_token, _ = made_on_the_page(site, "alices")
    with pytest.raises(ServerRefused) as person:
        join(site.served.base_url, alice_token, "alices", "alice", None, [])
    assert person.value.field == "node_user"
    assert json.loads((join_tokens.tokens_dir(site.served.path) / (
        hashlib.sha256(alice_token.encode()).hexdigest() + ".json")).read_text())["used"] is None  # not spent


def test_nobody_reaches_the_join_door_with_no_login(site):
    session = WebSession(site.served.base_url, "nobody", None, cookie="")
    assert session.page_json(PAGE + "?json")["login"] == "nobody"

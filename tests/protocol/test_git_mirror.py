"""The git mirror's rules (protocol/git_mirror.py, D49): an author's address is
a login's contact info only when it is a well-formed address no other login
claims; a note is one printable line per counted verdict."""
from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from ocx.protocol.git_mirror import address_of, author_addresses, note_text
from ocx.protocol.terminal import is_unsafe
from ocx.protocol.verdict import parse_verdict
from ocx.protocol.verdict_rules import ReadVerdict

# What git's ident needs of an address: no angle bracket, no line break, no NUL.
IDENT_SAFE = re.compile(r"[^<>\n\r\x00]*")


def test_well_formed_addresses_alone_are_taken():
    assert address_of("alice@example.org") == "alice@example.org"
    assert address_of("Alice Liddell <alice@example.org>") == "alice@example.org"
    assert address_of("  bob.b+tag@mail.example.co.uk ") == "bob.b+tag@mail.example.co.uk"
    for contact in ("", "alice", "alice@localhost", "alice@test", "a@x\nevil", "alice@example.org\nfatal",
                    "Alice <alice@example.org> more", "<a@b.c> <d@e.f>", "a b@example.org", "alice@exa_mple.org",
                    "alíce@example.org", "alice@example.org>", "x" * 250 + "@example.org"):
        assert address_of(contact) is None, contact


def test_an_address_two_logins_claim_is_neithers():
    got = author_addresses([("owner", "Owner <Owner@Example.org>"), ("poser", "owner@example.org"),
                            ("plain", "plain@example.org"), ("breaker", "b@example.org\nfatal")])
    assert got == {"owner": "", "poser": "", "plain": "plain@example.org", "breaker": ""}



def test_a_login_a_check_in_names_without_sending_it_has_no_address_nor_has_a_name_no_login_holds():
    # D21: a U card is anyone's to write. Fossil's export takes a login's address by the name the U card
    # gives, and a name holding `@` that is no login as its own address.
    got = author_addresses([("owner", "owner@example.org"), ("poser", "poser@example.org"),
                            ("plain", "plain@example.org")],
                           [("owner", "owner"), ("owner", "poser"), ("victim@example.org", "poser"),
                            ("plain", "plain"), ("poser", "poser")])
    assert got == {"owner": "", "poser": "poser@example.org", "plain": "plain@example.org",
                   "victim@example.org": ""}
    assert author_addresses([("local", "local@example.org")], [("local", None)]) == {"local": ""}


@given(st.lists(st.tuples(st.text(min_size=1), st.text()), unique_by=lambda pair: pair[0]),
       st.lists(st.tuples(st.text(min_size=1), st.none() | st.text(min_size=1))))
def test_only_a_login_that_sent_every_check_in_naming_it_has_an_address(pairs, checkins):
    got = author_addresses(pairs, checkins)
    assert set(got) == {login for login, _ in pairs} | {user for user, _ in checkins}
    for user, sender in checkins:
        if sender != user:
            assert got[user] == "", (user, sender)
    logins = {login for login, _ in pairs}
    assert all(got[user] == "" for user, _ in checkins if user not in logins)

@given(st.text())
def test_any_contact_gives_an_address_git_takes_or_none(contact):
    found = address_of(contact)
    assert found is None or (IDENT_SAFE.fullmatch(found) and found.isascii() and "@" in found)


@given(st.lists(st.tuples(st.text(min_size=1), st.text()), unique_by=lambda pair: pair[0]))
def test_no_address_goes_to_two_logins(pairs):
    got = author_addresses(pairs)
    given_addresses = [address.lower() for address in got.values() if address]
    assert len(given_addresses) == len(set(given_addresses))
    assert set(got) == {login for login, _ in pairs}


def verdict(tag: str, sender: str, value: str) -> ReadVerdict:
    return ReadVerdict(tag=tag, sender=sender, value=value, verdict=parse_verdict(value), counts=True, why="")


def test_a_note_names_each_counted_verdicts_tag_sender_result_reason_and_objective():
    text = note_text([verdict("ci", "ocx-node", "fail: 2 tests fail (against docs/ci.md)"),
                      verdict("audited", "rev", "pass: reads well (against README.md)")])
    assert text == ("audited: pass by rev against README.md: reads well\n"
                    "ci: fail by ocx-node against docs/ci.md: 2 tests fail\n")
    assert note_text([]) == ""


@given(st.text(), st.text())
def test_a_note_is_printable_lines_whatever_a_sender_wrote(sender, reason):
    text = note_text([verdict("audited", sender, f"pass: {reason} (against README.md)")])
    lines = text.splitlines()
    assert len(lines) == 1 and text.endswith("\n")
    assert not any(is_unsafe(character) for character in lines[0])  # the one terminal rule (terminal.py)

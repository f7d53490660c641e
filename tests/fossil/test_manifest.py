"""The card parser, pure (ocx/fossil/manifest.py)."""
from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ocx.fossil.manifest import ManifestError, is_artifact, parse, unescape


def sealed(body: bytes) -> bytes:
    """BODY with the Z card Fossil would append (MD5 of what precedes it)."""
    return body + b"Z " + hashlib.md5(body).hexdigest().encode() + b"\n"


def fossilize(text: str) -> str:  # Fossil's escaping, test side
    return text.replace("\\", "\\\\").replace(" ", "\\s").replace("\n", "\\n")


def test_forum_post_cards_and_body() -> None:
    body = "line one\nline two with spaces\n"
    data = sealed(
        b"D 2026-12-02T14:03:00.123\nH A\\stitle\\swith\\\\backslash\nN text/x-markdown\nU alice\n"
        + f"W {len(body.encode())}\n{body}\n".encode()
    )
    card = parse(data)
    assert [c.letter for c in card.cards] == ["D", "H", "N", "U", "W", "Z"]
    assert card.text("H") == "A title with\\backslash"
    assert card.wiki == body and card.user == "alice"


def test_tag_and_ticket_cards() -> None:
    target = "a" * 64
    data = sealed(
        f"D 2026-12-02T14:03:00\nJ +comment more\\swords\nJ status Open\nK {'b' * 40}\n"
        f"T +sym-audited {target} pass:\\sok\\s(against\\sPLAN.md)\nT -sym-ci {target}\nU bob\n".encode()
    )
    card = parse(data)
    assert [(t.op, t.name, t.target, t.value) for t in card.tags] == [
        ("+", "sym-audited", target, "pass: ok (against PLAN.md)"),
        ("-", "sym-ci", target, None),
    ]
    assert [(f.name, f.value, f.append) for f in card.ticket_fields] == [
        ("comment", "more words", True),
        ("status", "Open", False),
    ]


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"hello world\n",
        b"D 2026-12-02T14:03:00\nZ 00000000000000000000000000000000\n",  # wrong checksum
        b"D 2026-12-02T14:03:00\n",  # no Z card
        b"W 10\nshort\nZ x\n",
        b"d lower\nZ x\n",
    ],
)
def test_non_artifacts_are_refused(data: bytes) -> None:
    assert not is_artifact(data)
    with pytest.raises((ManifestError, UnicodeDecodeError)):
        parse(data)


def test_clear_signed_artifact_is_read_without_its_signature() -> None:
    inner = sealed(b"D 2026-12-02T14:03:00\nU alice\n")
    signed = (
        b"-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\n" + inner
        + b"-----BEGIN PGP SIGNATURE-----\nxyz\n-----END PGP SIGNATURE-----\n"
    )
    assert parse(signed).user == "alice"


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60))
def test_unescape_undoes_fossils_escaping(text: str) -> None:
    assert unescape(fossilize(text)) == text

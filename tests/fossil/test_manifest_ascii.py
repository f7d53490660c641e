"""The card parser reads numbers in 0-9 only (ocx/fossil/manifest.py, D41):
a blob shaped as the forum form writes one, dated in Arabic-Indic or other
digits, is no post waiting for its crosslink (Fossil's form never writes
one, and Fossil never crosslinks it), so no receipt is held for it; a W
card's byte count in such digits is no artifact. Pure."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fossil.test_form_posts import REPLY, post
from fossil.test_manifest import sealed
from ocx.fossil.manifest import ManifestError, is_artifact, is_form_post, parse
from ocx.fossil.times import card_date

DATE = REPLY[0][1][0]  # 2026-12-05T02:41:13.123
OTHER_DIGITS = st.characters(whitelist_categories=("Nd",)).filter(lambda c: not c.isascii()) | st.sampled_from("²³¹")


def dated(date: str):
    return post((("D", (date,)),) + REPLY[1:])


@given(st.data())
def test_a_form_shaped_blob_dated_in_other_digits_is_no_form_post(data) -> None:
    assert is_form_post(dated(DATE))
    places = [i for i, c in enumerate(DATE) if c.isdigit()]
    chosen = data.draw(st.lists(st.sampled_from(places), min_size=1, unique=True))
    date = "".join(data.draw(OTHER_DIGITS) if i in chosen else c for i, c in enumerate(DATE))
    assert not is_form_post(dated(date))
    with pytest.raises(ValueError):
        card_date(date)


def test_the_arabic_indic_year_python_would_take() -> None:
    """strptime's %Y is \\d{4}: it reads this year as 2026; the form's date check must not."""
    date = "٢٠٢٦" + DATE[4:]
    assert not is_form_post(dated(date))
    assert not is_form_post(dated(DATE.replace("T", "\uff34"))) and not is_form_post(dated(DATE.replace(".", "\u2024")))


@given(st.sampled_from(["٥", "５", "²", "\u0665", "5\u00a0"]))
def test_a_w_card_counts_bytes_in_0_to_9_only(count: str) -> None:
    text = "hello"
    good = sealed(b"D 2026-12-02T14:03:00.123\nU alice\nW 5\n" + text.encode() + b"\n")
    assert parse(good).wiki == text
    bad = sealed(f"D 2026-12-02T14:03:00.123\nU alice\nW {count}\n{text}\n".encode())
    with pytest.raises(ManifestError):
        parse(bad)
    assert not is_artifact(bad)


def test_a_w_card_count_past_any_size_is_no_artifact_not_a_crash() -> None:
    bad = sealed(b"D 2026-12-02T14:03:00.123\nU alice\nW " + b"9" * 5000 + b"\nhello\n")
    with pytest.raises(ManifestError):
        parse(bad)


@pytest.mark.fossil
def test_a_pushed_form_shaped_blob_dated_in_arabic_indic_digits_is_never_held(served) -> None:
    """For real: what a run may push, shaped as the form writes a reply but dated ٢٠٢٦; Fossil never
    crosslinks it, and the receipt that brought it is settled at once (no 60 s hold per receipt)."""
    import hashlib

    web = served.web("alice")
    root = web.new_thread("pushed into, in other digits", "a root")
    artifact = sealed(f"D ٢٠٢٦-12-05T02:41:13.123\nG {root}\nI {root}\nN text/x-markdown\nU alice\nW 3\nbad\n"
                      .encode())
    with served.repository() as repo:
        project_code = repo.project_code
    hash_ = hashlib.sha3_256(artifact).hexdigest()
    web.push_artifacts([(hash_, artifact)], project_code)
    with served.repository() as repo:
        rcvid = repo.sender(hash_).rcvid
        (receipt,) = [r for r in repo.receipts_since(rcvid - 1) if r.rcvid == rcvid]
        assert hash_ in {a.hash for a in receipt.artifacts} and repo.event_type(hash_) is None
        assert repo.unsettled(receipt) == [] and repo.settled(receipt)

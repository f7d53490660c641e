"""Digits that are not digits, spaces that are not spaces, letters that look
like others: every parser of what a run, a repository or a request writes
refuses them (D41). Each valid ASCII value below, with one of its characters
swapped for a Unicode digit of the same value, a Unicode space or a
lookalike, is refused by the parser that took it."""
from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ocx.protocol import FieldError, parse_message
from ocx.protocol.budget import parse_memory, parse_wall
from ocx.protocol.finder import envelope, find_message
from ocx.protocol.hashes import is_full_hash, is_hash_prefix
from ocx.protocol.numerals import decimal_number, is_digits, whole_number
from ocx.protocol.verdict import check_against, parse_verdict

from .examples import NODE, record

# Decimal digits of other scripts (Nd), and characters str.isdigit takes that int() does not (No).
OTHER_DIGITS = st.characters(whitelist_categories=("Nd",)).filter(lambda c: not c.isascii()) | st.sampled_from("²³¹⁰₀①")
SPACES = st.sampled_from("\u00a0\u1680\u2000\u2003\u2007\u2009\u200a\u202f\u205f\u3000\u2028\u2029\x85\x1c\u180e\u200b\ufeff")
LOOKALIKES = st.sampled_from("аеорсхАВЕКМНОРСТХ" "ａｂｃｄｅｆ０１" "ı℮ⅰꓲ" "\u0301")  # Cyrillic, fullwidth, others, a combining mark


def same_value(character: str) -> str:
    """A Unicode digit with the value of ASCII digit CHARACTER, when one exists: the most deceptive swap."""
    return {"0": "٠", "1": "١", "2": "٢", "3": "٣", "4": "٤", "5": "٥", "6": "٦", "7": "٧", "8": "८", "9": "９"}[character]


def swapped(data: st.DataObject, valid: str, *, digits_only: bool = False) -> str:
    """VALID with one character (a digit, if DIGITS_ONLY) swapped for a non-ASCII one, or a space put in."""
    places = [i for i, c in enumerate(valid) if c.isascii() and c.isdigit()] if digits_only else list(range(len(valid)))
    at = data.draw(st.sampled_from(places))
    kind = data.draw(st.sampled_from(["same value", "digit", "space", "lookalike"]))
    if kind == "same value" and valid[at].isdigit():
        other = same_value(valid[at])
    else:
        other = data.draw({"digit": OTHER_DIGITS, "space": SPACES}.get(kind, LOOKALIKES))
    return valid[:at] + other + valid[at + 1:]


def refuses(parse, text: str) -> bool:
    try:
        parse(text)
    except (FieldError, ValueError):
        return True
    return False


def test_the_swaps_are_what_python_reads_as_numbers() -> None:
    """Why the parsers must say no: Python itself says yes to all of these."""
    assert int("١٢") == 12 and float("３.５") == 3.5 and "²".isdigit() and unicodedata.digit("८") == 8
    assert "\u3000".isspace() and "x\u00a0".strip() == "x"


@given(st.data())
def test_budgets_refuse_them(data) -> None:
    for parse, valid in ((parse_wall, "90s"), (parse_wall, "2h"), (parse_memory, "512M"), (parse_memory, "1024")):
        assert refuses(parse, swapped(data, valid, digits_only=data.draw(st.booleans())))


@given(st.data())
def test_hashes_refuse_them(data) -> None:
    full = "0123456789abcdef" * 4
    assert not is_full_hash(swapped(data, full)) and not is_full_hash(swapped(data, full[:40]))
    assert not is_hash_prefix(swapped(data, full[:12]))


@given(st.data())
def test_numbers_written_in_text_refuse_them(data) -> None:
    for valid in ("0", "42", "-17", "9223372036854775807"):
        assert refuses(whole_number, swapped(data, valid, digits_only=True))
        assert not is_digits(swapped(data, valid.lstrip("-"), digits_only=True))
    assert refuses(decimal_number, swapped(data, "12.5", digits_only=True))
    for text in ("nan", "inf", "-Infinity", "1e3", " 1", "1_000", "0x10"):
        assert refuses(decimal_number, text) and refuses(whole_number, text)


@given(st.data())
def test_a_records_names_refuse_them(data) -> None:
    field = data.draw(st.sampled_from(["user", "runner", "branch", "node"]))
    valid = {"user": "ci-dev42", "runner": "claude", "branch": "docs-sync2", "node": NODE}[field]
    changed = swapped(data, valid)
    obj = record(restrict={"branch": changed}) if field == "branch" else record(**{field: changed})
    if field == "node":  # another node's message: C1 ignores it, whatever else it holds
        assert not envelope(obj).is_for(NODE)
        return
    with pytest.raises(FieldError) as refused:
        parse_message(obj)
    assert refused.value.field.endswith(field)


@given(st.data())
def test_a_verdicts_object_is_never_read_through_them(data) -> None:
    record_hash = "0123456789abcdef" * 4
    changed = swapped(data, record_hash)
    verdict = parse_verdict(f"pass: fine (against {changed})")
    assert verdict is None or not verdict.against_record  # never the record's hash
    assert parse_verdict(f"pass: fine (against{data.draw(SPACES)}PLAN.md)") is None
    assert parse_verdict(f"pass: fine (against PLAN{data.draw(SPACES)}.md)") is None
    assert refuses(check_against, f"docs/PLAN{data.draw(SPACES)}.md")


@given(SPACES | LOOKALIKES)
def test_a_json_fence_is_opened_by_json_in_ascii_only(other: str) -> None:
    block = '{"ocx": 1, "kind": "stop"}'
    assert find_message(f"```json\n{block}\n```") == {"ocx": 1, "kind": "stop"}
    assert find_message(f"```json{other}\n{block}\n```") is None  # another info string (CommonMark trims spaces, tabs)
    assert find_message(f"```js{other}on\n{block}\n```") is None
    assert find_message(f"```json\n{block}\n```{other}") in (None, {"ocx": 1, "kind": "stop"})


@given(OTHER_DIGITS)
def test_json_numbers_are_ascii_digits_only(digit: str) -> None:
    assert find_message(f'```json\n{{"ocx": {digit}}}\n```') is None
    assert find_message(f'```json\n{{"ocx": 1, "n": 1{digit}}}\n```') is None

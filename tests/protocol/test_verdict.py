import pytest
from hypothesis import given, strategies as st

from ocx.protocol.errors import FieldError
from ocx.protocol.verdict import Judgement, format_verdict, last_line, parse_verdict

HASH = "ab" * 20


def test_format_and_parse_round_trip():
    value = format_verdict("pass", "every command is documented", HASH)
    assert value == f"pass: every command is documented (against {HASH})"
    verdict = parse_verdict(value)
    assert verdict.judgement is Judgement.passed
    assert verdict.reason == "every command is documented"
    assert verdict.against == HASH and verdict.against_record


def test_against_a_file_in_the_check_in():
    verdict = parse_verdict("fail: tests fail (see log) (against PLAN.md)")
    assert verdict.judgement is Judgement.failed
    assert verdict.reason == "tests fail (see log)"
    assert verdict.against == "PLAN.md" and not verdict.against_record


@pytest.mark.parametrize("value", ["pass", "pass: (against X)", "ok: fine (against X)", "pass: fine",
                                   "pass: two\nlines (against X)", "PASS: x (against X)", "pass:x (against X)",
                                   "pass: x (against a b)", "", None, 3])
def test_values_that_are_not_verdicts(value):
    assert parse_verdict(value) is None


@pytest.mark.parametrize("reason,against,field", [("", HASH, "reason"), ("a\nb", HASH, "reason"),
                                                  ("ok", "has space", "against"), ("ok", "", "against"),
                                                  ("ok", "/etc/passwd", "against"), ("ok", "../x", "against")])
def test_format_refuses_naming_the_field(reason, against, field):
    with pytest.raises(FieldError) as error:
        format_verdict("pass", reason, against)
    assert error.value.field == field


def test_format_refuses_an_unknown_judgement():
    with pytest.raises(ValueError):
        format_verdict("maybe", "x", HASH)


def test_last_line_is_the_reason_of_a_command_run():
    assert last_line("building\n3 passed, 0 failed\n\n") == "3 passed, 0 failed"
    assert last_line("") == "no output"


@given(st.text())
def test_has_control_is_is_control_of_any_character(text) -> None:
    from ocx.protocol.render import has_control, is_control

    assert has_control(text) == any(is_control(c) for c in text)
    assert has_control(text + "\u2028") and has_control("\x7f") and has_control("\x9f") and not has_control("\xa0")

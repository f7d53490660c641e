import pytest

from ocx.protocol import parse_message
from ocx.protocol.admission import Inadmissible, RunnerOffer, check_admission

from .examples import ci_record, record

OFFERS = {"claude": RunnerOffer("claude", remote=True), "codex": RunnerOffer("codex", remote=False)}


def error(obj, caps=None, enforced=None, node_user="ocx-node"):
    """The refusal check_admission raises, or None when it admits the record."""
    kwargs = {} if enforced is None else {"enforced": enforced}
    try:
        check_admission(parse_message(obj), offers=OFFERS, node_user=node_user, run_user_letters=caps, **kwargs)
    except Inadmissible as refusal:
        return refusal
    return None


def test_an_offered_runner_with_an_ordinary_user_is_admitted():
    assert error(record()) is None
    assert error(ci_record()) is None
    assert error(record(runner="codex", remote=False)) is None


@pytest.mark.parametrize("obj,field", [
    (record(runner="gemini"), "runner"), (record(runner="codex", remote=True), "remote"),
    (ci_record(remote=True), "remote"), (record(user="ocx-node"), "user"),
])
def test_records_that_cannot_run_here_name_the_field(obj, field):
    assert error(obj).field == field


def test_a_run_user_holding_admin_or_setup_is_refused():
    assert error(record(), caps="s").field == "user"
    assert error(record(), caps="ai").field == "user"
    assert error(record(), caps=None) is None  # a user that does not exist yet is made by the node


@pytest.mark.parametrize("letters", ["i", "u", "v", "4", "gior234", "h"])
def test_a_run_user_holding_any_letter_is_refused(letters):
    found = error(record(), caps=letters)
    assert found.field == "user" and "D40" in found.why


def test_a_former_run_user_holding_nothing_may_run_again():
    assert error(record(), caps="") is None


@pytest.mark.parametrize("login", ["nobody", "anonymous", "reader", "developer"])
def test_fossils_special_logins_are_refused_even_when_they_hold_nothing(login):
    found = error(record(user=login), caps="")
    assert found.field == "user" and "special" in found.why


def test_a_restriction_this_node_does_not_enforce_is_refused():
    found = error(record(), enforced=frozenset({"no_password"}))
    assert found.field == "restrict.branch" and "cannot enforce" in found.why

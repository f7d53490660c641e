"""What a preparation may do with the run user's letters it finds, and when the node's pass calls
enforcement lost (node/letters.py: C5, D24, D40). Pure: the rules both decide from."""
import pytest
from hypothesis import given as for_all, strategies as st

from ocx.node.letters import (RUN_USER_CAPABILITIES, LettersChanged, NotIdle, check_found, enforcement_lost,
    gave_letters, letters_set, note_given)

LETTERS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", max_size=12)


def test_a_new_or_idle_login_is_given_its_letters():
    check_found("claude-1", None, given=False)  # new
    check_found("claude-1", "", given=False)  # idle: a former run user
    check_found("claude-1", "", given=True)  # this record's letters not given yet (its first try cut off)
    check_found("claude-1", RUN_USER_CAPABILITIES, given=True)  # its own, from an earlier check-in's run


@pytest.mark.parametrize("held", ["a", "s", "g", "gior234", "u", "v"])
def test_letters_gained_before_the_first_run_refuse_the_record_naming_user(held):
    """D40 again at a delayed start: whatever it holds, even exactly a run's, was given by someone else."""
    with pytest.raises(NotIdle) as refused:
        check_found("claude-1", held, given=False)
    assert str(refused.value).startswith("user: ") and "D40" in str(refused.value)
    assert refused.value.mark() == {"refused_user": str(refused.value)}


@pytest.mark.parametrize("held", ["gior234a", "gior234s", "gior234x", "gio", "a", "gior234u"])
def test_letters_changed_after_the_record_gave_them_are_unenforced_never_reset(held):
    with pytest.raises(LettersChanged) as lost:
        check_found("claude-1", held, given=True)
    assert "D24" in str(lost.value) and lost.value.mark() == {"unenforced": str(lost.value)}


def test_letters_all_taken_after_they_were_set_are_unenforced_never_given_back():
    check_found("claude-1", "", given=True, settled=False)  # its first try cut off before it set them
    for held in ("", None):  # taken away, or the login deleted
        with pytest.raises(LettersChanged, match="none of its run's"):
            check_found("claude-1", held, given=True, settled=True)


@for_all(st.none() | LETTERS, st.booleans(), st.booleans())
def test_the_preparation_goes_on_only_with_what_the_node_left(held, given, settled):
    settled = given and settled  # set only once noted
    try:
        check_found("x", held, given, settled)
    except (NotIdle, LettersChanged):
        assert (held and (not given or set(held) != set(RUN_USER_CAPABILITIES))) or (not held and settled)
    else:
        assert (not held and not settled) or (given and set(held) == set(RUN_USER_CAPABILITIES))


def test_the_pass_calls_enforcement_lost_for_admin_or_any_letter_beyond_the_runs():
    assert enforcement_lost("u1", "gior234", admin=False, given=True) is None
    assert "admin or setup" in enforcement_lost("u1", "gior234a", admin=True, given=True)
    assert "'x'" in enforcement_lost("u1", "gior234x", admin=False, given=True)
    assert enforcement_lost("u1", "gi", admin=False, given=True) is None  # fewer: its preparation says (D24)
    # Not given yet: the preparation decides (D40), and leaves the login as it is.
    assert enforcement_lost("u1", "a", admin=True, given=False) is None


def test_the_note_that_letters_were_given_is_kept_once(tmp_path):
    assert not gave_letters(tmp_path)
    note_given(tmp_path, "u1")
    first = (tmp_path / "given.json").read_text()
    note_given(tmp_path, "u1")
    assert gave_letters(tmp_path) and (tmp_path / "given.json").read_text() == first


def test_the_pass_judges_letters_only_once_they_are_set(tmp_path):
    """A new login holds Fossil's default-perms (`u`) for the instant between its making and its letters:
    the node's pass saw that instant once as letters given beyond the run's."""
    note_given(tmp_path, "u1")
    assert gave_letters(tmp_path) and not letters_set(tmp_path)
    note_given(tmp_path, "u1", done=True)
    assert letters_set(tmp_path)
    note_given(tmp_path, "u1")  # a later preparation's note before it sets them again: still set
    assert letters_set(tmp_path)


def test_what_the_pass_remembers_of_the_note_follows_the_file(tmp_path):
    """letters_set keeps its answer by the file's stamp: a note written again, removed or made unreadable
    is read as it is now, never as it was."""
    assert not letters_set(tmp_path)
    note_given(tmp_path, "u1")
    assert not letters_set(tmp_path) and not letters_set(tmp_path)  # asked again: the same, from the stamp
    note_given(tmp_path, "u1", done=True)
    assert letters_set(tmp_path) and letters_set(tmp_path)
    (tmp_path / "given.json").unlink()
    assert not letters_set(tmp_path)
    (tmp_path / "given.json").write_text('{"user": "u1", "set": true}\n')
    assert letters_set(tmp_path)
    (tmp_path / "given.json").write_text("[]\n")
    assert not letters_set(tmp_path)

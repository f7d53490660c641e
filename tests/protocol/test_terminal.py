"""The one terminal-safe rendering (protocol/terminal.py): no character a
terminal acts on or hides survives it, and text without one is unchanged."""
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from ocx.protocol.terminal import UNSAFE_CATEGORIES, is_unsafe, terminal_safe

# Every code point, lone surrogates included (st.text leaves them out by default).
anything = st.text(alphabet=st.characters(blacklist_categories=()), max_size=60)
SEQUENCES = ["\x1b]0;owned\x07", "\x1b]52;c;cm0gLXJmIH4=\x07", "\x1b]8;;http://x\x1b\\", "\x1b[2J", "\x1b[31;1m",
             "\x9b2J", "\x9d0;t\x9c", "\x1bP+q\x1b\\", "\x1bc", "\x1b(0", "\u202e", "\u2066", "\u202a", "\u200f",
             "\u2028", "\ufeff", "\U000e0041", "\x00", "\x7f", "\x85", "\r", "\x08"]
hostile = st.lists(st.sampled_from(SEQUENCES) | st.text(max_size=5), max_size=12).map("".join)
safe_text = st.text(alphabet=st.characters(blacklist_categories=tuple(UNSAFE_CATEGORIES)), max_size=60)


def unsafe_in(text: str, keep: str = "") -> list[str]:
    return [c for c in text if unicodedata.category(c) in UNSAFE_CATEGORIES and c not in keep]


@given(anything | hostile)
def test_no_unsafe_character_survives(text: str) -> None:
    out = terminal_safe(text)
    assert not unsafe_in(out)
    out.encode("utf-8")  # no lone surrogate: printing it cannot fail either


@given(anything | hostile, st.booleans())
def test_kept_controls_alone_survive_and_dropping_sequences_leaves_no_escape(text: str, drop: bool) -> None:
    out = terminal_safe(text, keep="\n\t", drop_sequences=drop)
    assert not unsafe_in(out, keep="\n\t") and "\x1b" not in out and "\x07" not in out and "\x9b" not in out


@given(safe_text)
def test_printable_text_is_unchanged(text: str) -> None:
    assert terminal_safe(text) == text and terminal_safe(text, drop_sequences=True) == text


@given(anything | hostile)
def test_rendering_twice_changes_nothing_more(text: str) -> None:
    once = terminal_safe(text)
    assert terminal_safe(once) == once


def test_each_attack_is_shown_visibly_not_acted_on() -> None:
    comment = "fix\x1b]0;root@prod\x07\x1b[2J\x1b]52;c;ZWNobyBvd25lZA==\x07 \u202etxt.exe\u202c"
    assert terminal_safe(comment) == ("fix\\x1b]0;root@prod\\x07\\x1b[2J\\x1b]52;c;ZWNobyBvd25lZA==\\x07 "
                                      "\\u202etxt.exe\\u202c")
    assert terminal_safe("a\nb\tc\rd") == "a\\nb\\tc\\rd" and terminal_safe("a\nb\tc", keep="\n\t") == "a\nb\tc"
    assert terminal_safe("\x1b[31mred\x1b[0m \x1b]0;t\x07ok\x1b", drop_sequences=True) == "red ok\\x1b"
    assert all(is_unsafe(c) for c in "\x00\x1b\x7f\x9b\u200b\u200e\u202a\u202e\u2066\u2069\u2028\u2029\ufeff\U000e0001")
    assert not any(is_unsafe(c) for c in "aé€中 ~\\🙂")

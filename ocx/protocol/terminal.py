"""Text from a repository or a run, made safe to write to a terminal.

Every byte a run or a check-in's sender writes is hostile (D41): a comment,
a tag's value, an objective or a note may hold an escape sequence that sets
the window's title, clears the screen, writes the clipboard (OSC 52), or a
bidirectional override that shows one text as another. `terminal_safe` is
the one rendering every reader on the command line prints through
(cli/cli_reading.py, cli.py, cli_tools.py, cli_attach.py), and the
console's text of what a program printed (page/console/words.py). Pure.
"""
from __future__ import annotations

import re
import unicodedata

# Unicode categories a terminal does not show as a glyph: controls (Cc: C0,
# DEL, C1), format characters (Cf: the bidirectional embeddings, overrides
# and isolates U+202A-202E and U+2066-2069, marks, zero widths, tag
# characters), lone surrogates (Cs: not even UTF-8), and the line and
# paragraph separators (Zl, Zp), which some terminals and pagers break on.
UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})

# ECMA-48's sequences, 7-bit and 8-bit: CSI (ESC [ or 0x9B, then parameters),
# the strings OSC, DCS, SOS, PM and APC up to their terminator (BEL, ESC \ or
# ST), and any other ESC with its intermediates and final byte.
_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]",
    re.ASCII,
)
_ASCII_CONTROL = re.compile(r"[\x00-\x1f\x7f]", re.ASCII)


def is_unsafe(character: str) -> bool:
    """A character a terminal may act on or hide instead of showing it."""
    return unicodedata.category(character) in UNSAFE_CATEGORIES


_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def shown(character: str) -> str:
    """CHARACTER as Python writes it in a string's source: `\\n`, `\\x1b`, `\\u202e`."""
    if character in _SHORT:
        return _SHORT[character]
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def terminal_safe(text: str, keep: str = "", drop_sequences: bool = False) -> str:
    """TEXT with every unsafe character but those in KEEP (say "\\n\\t")
    written out visibly as its escape (`shown`), so no byte of it reaches a
    terminal as a control and a reader sees that something was there. With
    DROP_SEQUENCES, whole escape sequences are removed first (a program's
    colours, in the console's view of its output); an unfinished one is
    still shown. Text with nothing unsafe is returned unchanged."""
    if drop_sequences:
        text = _SEQUENCE.sub("", text)
    if text.isascii():  # the usual case, and a queue's every line: one regex pass
        return _ASCII_CONTROL.sub(lambda m: m.group() if m.group() in keep else shown(m.group()), text)
    return "".join(shown(c) if c not in keep and is_unsafe(c) else c for c in text)

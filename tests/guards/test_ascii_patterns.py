"""Digits that are not digits (D41): in ocx/, a pattern
that uses \\d \\w \\s \\b (or their negations) is compiled with re.ASCII, and
no str.isdigit/isdecimal/isnumeric is asked outside protocol/numerals.py:
each takes the digits and spaces of every script (`٣`, `３`, `³`, U+3000),
which Fossil, systemd and a reader of the text take for none."""
from __future__ import annotations

import ast
import re

from . import scan

OCX = [path for path in scan.tracked_python_files() if path.startswith("ocx/")]
RE_FUNCTIONS = {"compile", "match", "search", "fullmatch", "sub", "subn", "split", "findall", "finditer"}
UNICODE_CLASSES = re.compile(r"\\[dDwWsSbB]")  # in a pattern's text: a class whose meaning re.ASCII narrows
UNICODE_PREDICATES = {"isdigit", "isdecimal", "isnumeric"}
NUMERALS = "ocx/protocol/numerals.py"


def _names_ascii(flags: ast.expr) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr in ("ASCII", "A") for n in ast.walk(flags))


def unicode_patterns(source: str) -> list[int]:
    """Lines calling re.F(PATTERN, ...) where PATTERN's text holds \\d \\w \\s \\b and no re.ASCII is given."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in RE_FUNCTIONS
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "re" and node.args):
            continue
        texts = [n.value for n in ast.walk(node.args[0]) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        if not any(UNICODE_CLASSES.search(t) for t in texts) or any("(?a" in t for t in texts):
            continue
        flags = [*node.args[1:], *(k.value for k in node.keywords if k.arg == "flags")]
        if not any(_names_ascii(f) for f in flags):
            found.append(node.lineno)
    return found


def unicode_predicates(source: str) -> list[int]:
    return [node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in UNICODE_PREDICATES]


def test_every_pattern_with_a_unicode_class_is_ascii() -> None:
    offenders = {path: lines for path in OCX if (lines := unicode_patterns((scan.ROOT / path).read_text()))}
    assert not offenders, f"compile these with re.ASCII (or spell the class, [0-9]): {offenders}"


def test_no_unicode_digit_predicate_outside_numerals() -> None:
    offenders = {path: lines for path in OCX if path != NUMERALS
                 and (lines := unicode_predicates((scan.ROOT / path).read_text()))}
    assert not offenders, f"ask ocx.protocol.numerals.is_digits instead: {offenders}"


def test_the_guard_sees_what_it_names() -> None:
    assert unicode_patterns('import re\nX = re.compile(r"\\d+")\n') == [2]
    assert unicode_patterns('re.match(r"a\\sb", t, re.DOTALL)') == [1]
    assert unicode_patterns('re.split(r"\\w" + x, t, flags=re.M)') == [1]
    assert unicode_patterns('re.compile(r"\\d+", re.DOTALL | re.ASCII)') == []
    assert unicode_patterns('re.sub(r"\\d", "", t, flags=re.A)') == []
    assert unicode_patterns('re.compile(r"(?a)\\d")') == []
    assert unicode_patterns('re.compile(r"[0-9]+")') == [] and unicode_patterns('re.compile(rb"\\d")') == []
    assert unicode_predicates("ok = text.isdigit() or t.isnumeric()") == [1, 1]

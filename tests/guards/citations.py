"""Citations of the standard's ids and the pages that define them: pure functions over text.

The code and the docs cite the standard's elements by id (C4, D12, F2, V1,
Ax1, Part 4). docs/protocol.md and docs/decisions.md define each, as a
heading (`### C4. The response`) or a bold lead (`- **D12. The place.**`).
An issue's number (or a hole's of an issue) is no citation: no reader of the
repository can open it, so the tree cites a D-id, an element or a docs
section instead.
"""
from __future__ import annotations

import re
import subprocess

from .scan import ROOT

DEFINING = ("docs/protocol.md", "docs/decisions.md")

# One or two digits: a linter's codes (F401, E501, C901, D100) have three.
_ID = r"(?:[CDFV][1-9][0-9]?|Ax[1-9][0-9]?|Part [1-9][0-9]?)"
CITED = re.compile(rf"\b{_ID}\b")
DEFINED = re.compile(rf"^(?:#{{2,4}} |- \*\*|\*\*)({_ID})\.", re.MULTILINE)

# The word issue(s) or hole(s), then a number (with or without "#"), in any case, even across a line's end.
ISSUE_CITED = re.compile(r"\b(?:issues?|holes?)\s+#?[0-9]", re.IGNORECASE)

# Spelled like an id, and not one: never a citation.
NOT_CITATIONS = frozenset({
    "V8",  # the JavaScript engine node.js agents run on
})


def tracked_text_files() -> list[str]:
    """Every file git tracks or would track (untracked, not ignored) that is text."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    found = []
    for path in sorted(out.splitlines()):
        file = ROOT / path
        if not file.is_file():
            continue
        try:
            file.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        found.append(path)
    return found


def definitions(text: str) -> list[str]:
    """The ids a defining page defines, in order, repeats kept."""
    return DEFINED.findall(text)


def citations(text: str) -> list[tuple[int, str]]:
    """(line number, id) of every id TEXT cites."""
    return [(number, found) for number, line in enumerate(text.splitlines(), 1)
            for found in CITED.findall(line) if found not in NOT_CITATIONS]


def undefined(texts: dict[str, str], defined: set[str]) -> list[str]:
    """`path:line: ID` for each citation in TEXTS (path → text) of an id not in DEFINED."""
    return [f"{path}:{number}: {found}" for path, text in sorted(texts.items())
            for number, found in citations(text) if found not in defined]


def gaps(ids: list[str], prefix: str) -> list[str]:
    """The numbers missing from PREFIX1…PREFIXn among IDS, n the highest defined."""
    numbers = {int(i[len(prefix):]) for i in ids if i.startswith(prefix) and i[len(prefix):].isdigit()}
    return [f"{prefix}{n}" for n in range(1, max(numbers, default=0) + 1) if n not in numbers]


def issue_citations(texts: dict[str, str]) -> list[str]:
    """`path:line: text` for each citation of an issue's (or a hole's) number in TEXTS (path → text)."""
    found = []
    for path, text in sorted(texts.items()):
        for match in ISSUE_CITED.finditer(text):
            number = text.count("\n", 0, match.start()) + 1
            found.append(f"{path}:{number}: {text.splitlines()[number - 1].strip()}")
    return found

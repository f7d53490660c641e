"""Every id the tree cites (C4, D12, F2, V1, Ax1, Part 4) is defined in docs/protocol.md or docs/decisions.md,
and no file cites an issue's number, which no reader of the repository can open."""
from __future__ import annotations

from collections import Counter

from . import citations
from .scan import ROOT

FILES = citations.tracked_text_files()
DEFINED = {path: citations.definitions((ROOT / path).read_text()) for path in citations.DEFINING}
ALL_DEFINED = {found for ids in DEFINED.values() for found in ids}


def test_the_defining_pages_define_the_standard_and_every_decision():
    protocol, decisions = (set(DEFINED[path]) for path in citations.DEFINING)
    assert {f"C{n}" for n in range(1, 8)} | {"F1", "F2", "F3", "V1", "V2"} <= protocol
    assert {f"Part {n}" for n in range(1, 5)} | {f"Ax{n}" for n in range(1, 6)} <= protocol
    assert {f"D{n}" for n in range(1, 51)} <= decisions
    assert not citations.gaps(DEFINED["docs/decisions.md"], "D"), "D-numbers run without a gap"


def test_each_id_is_defined_once():
    repeated = [found for found, n in Counter(d for ids in DEFINED.values() for d in ids).items() if n > 1]
    assert not repeated


def test_every_cited_id_is_defined():
    texts = {path: (ROOT / path).read_text(encoding="utf-8") for path in FILES}
    assert len(texts) > 100 and "ocx/protocol/messages.py" in texts
    missing = citations.undefined(texts, ALL_DEFINED)
    assert not missing, ("cited, but defined in neither docs/protocol.md nor docs/decisions.md "
                         "(define it there, or cite the right id):\n" + "\n".join(missing))


# Spelled from pieces, so that this file does not trip the guard below.
ISSUE = "issue" + " "

# Issue citations left as they are, each for its reason: (path, a piece of its line) → why. An entry
# whose line no longer cites an issue fails, so the list only shrinks.
KEPT_ISSUE_CITATIONS: dict[tuple[str, str], str] = {}  # none: every citation leads a reader somewhere


def test_no_file_cites_an_issue_by_number():
    texts = {path: (ROOT / path).read_text(encoding="utf-8") for path in FILES}
    found = citations.issue_citations(texts)
    kept = {key for key in KEPT_ISSUE_CITATIONS for line in found
            if line.startswith(key[0] + ":") and key[1] in line}
    cited = [line for line in found
             if not any(line.startswith(path + ":") and piece in line for path, piece in KEPT_ISSUE_CITATIONS)]
    assert not cited, ("an issue's number leads no reader anywhere: cite the decision (docs/decisions.md), "
                       "the element (docs/protocol.md) or the docs section that holds the reason:\n"
                       + "\n".join(cited))
    assert kept == set(KEPT_ISSUE_CITATIONS), f"no longer cites an issue, drop it here: {set(KEPT_ISSUE_CITATIONS) - kept}"


# The detectors, shown to catch what they must. Ids that are not defined are
# built from pieces, so that this file does not trip the guard above.

def test_detector_catches_an_undefined_citation():
    defined = {"C4", "D12", "Part 4", "Ax1"}
    unknown_decision, unknown_element = "D" + "51", "C" + "8"
    texts = {"ocx/x.py": f"# answered once (C4, D12)\nx = 1  # {unknown_decision}\n",
             "docs/y.md": f"See Part 4 and Ax1, then {unknown_element}'s rule.\n"}
    assert citations.undefined(texts, defined) == [f"docs/y.md:1: {unknown_element}", f"ocx/x.py:2: {unknown_decision}"]


def test_detector_reads_citations_and_definitions_as_the_tree_writes_them():
    assert citations.citations("(D13-D17), D7–D9, C2's budget, D1…D44") == [
        (1, "D13"), (1, "D17"), (1, "D7"), (1, "D9"), (1, "C2"), (1, "D1"), (1, "D44")]
    # Not citations: inside a hash or a word, lower case, or a known name.
    assert citations.citations("5c5a0c788aD3e ocx-d3 d12 node12 V8's JIT CD12 # noqa: F401, C901, D100") == []
    page = "## Part 2. Control\n### C1. Messages\n- **D7. Finding.** text\n- **Ax1. Control.**\nC3. not a heading\n"
    assert citations.definitions(page) == ["Part 2", "C1", "D7", "Ax1"]
    assert citations.gaps(["D1", "D2", "D4"], "D") == ["D3"]


def test_issue_detector_catches_every_spelling_and_nothing_else():
    hole, issues = "hole" + " ", "Issues" + " "
    texts = {"ocx/x.py": f"# retried ({ISSUE}13)\n# ({hole}6) and ({issues}14 and 15)\nx = 1  # {ISSUE}#6's job\n",
             "docs/y.md": f"Held by ({ISSUE}12\nitem 5), and by the {ISSUE}\n17 console.\n",
             "docs/z.md": "An issue of timing; the whole 3 s; issue-free; D13 and docs/node.md, 'Faults'.\n"}
    assert [line.split(": ")[0] for line in citations.issue_citations(texts)] == [
        "docs/y.md:1", "docs/y.md:2", "ocx/x.py:1", "ocx/x.py:2", "ocx/x.py:2", "ocx/x.py:3"]

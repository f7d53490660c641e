"""The way back's parsers (D50), pure: what `git log -z`, `git ls-tree -z` and
Fossil's F cards say is read back exactly, and anything else is refused
whole (HistoryError), never guessed at."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ocx.fossil.lineage import FossilFile, files_of_cards
from ocx.fossil.manifest import Card, escape
from ocx.git.history import Commit, HistoryError, TreeFile, fossil_origin, parse_log, parse_tree, unsafe_path
from ocx.git.way_back import git_blob_hash, same_files

hashes = st.sampled_from([40, 64]).flatmap(lambda n: st.text("0123456789abcdef", min_size=n, max_size=n))
messages = st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), max_size=200)
commits = st.builds(Commit, hashes, st.lists(hashes, max_size=3).map(tuple),
                    st.integers(min_value=-(10**11), max_value=10**11), messages)
parts = st.text(st.characters(blacklist_characters="/", blacklist_categories=("Cs", "Cc")), min_size=1, max_size=12)
paths = st.lists(parts, min_size=1, max_size=4).map("/".join).filter(lambda p: not unsafe_path(p))


def as_git_log(listed: list[Commit]) -> str:
    """What `git log -z --format=%H%x00%P%x00%at%x00%B` prints for LISTED."""
    return "".join(f"{c.hash}\0{' '.join(c.parents)}\0{c.author_time}\0{c.message}\0" for c in listed)


@given(st.lists(commits, max_size=8))
def test_a_log_reads_back_as_git_wrote_it(listed: list[Commit]) -> None:
    assert parse_log(as_git_log(listed)) == listed


@given(st.lists(commits, min_size=1, max_size=4), st.integers(min_value=1, max_value=3))
def test_a_log_missing_fields_is_refused(listed: list[Commit], cut: int) -> None:
    fields = as_git_log(listed)[:-1].split("\0")
    with pytest.raises(HistoryError):
        parse_log("\0".join(fields[:-cut]) + "\0")


@given(hashes, st.text("0123456789abcdefXYZ ", max_size=30))
def test_a_commit_whose_fields_are_not_gits_is_refused(hash_: str, parents: str) -> None:
    text = f"{hash_}\0{parents}\0{1}\0message\0"
    if all(p and len(p) in (40, 64) and set(p) <= set("0123456789abcdef") for p in parents.split(" ")) \
            or parents == "":
        assert parse_log(text)[0].hash == hash_
    else:
        with pytest.raises(HistoryError):
            parse_log(text)


@given(messages, hashes)
def test_the_exports_trailer_names_its_checkin(body: str, checkin: str) -> None:
    assert fossil_origin(f"{body.rstrip()}\n\nFossilOrigin-Name: {checkin}\n") == checkin


@given(messages)
def test_a_message_without_the_trailer_names_none(body: str) -> None:
    assert fossil_origin(body.replace("FossilOrigin-Name", "")) is None


def test_a_trailer_quoted_above_the_last_paragraph_names_none() -> None:
    checkin = "ab" * 20
    assert fossil_origin(f"subject\n\nFossilOrigin-Name: {checkin}\n\nSigned-off-by: x\n") is None


@given(st.lists(st.tuples(paths, hashes, st.booleans()), max_size=10))
def test_a_tree_reads_back_as_git_wrote_it(entries: list[tuple[str, str, bool]]) -> None:
    text = "".join(f"{'100755' if x else '100644'} blob {h}\t{p}\0" for p, h, x in entries)
    assert parse_tree(text) == [TreeFile(p, h, x) for p, h, x in entries]


@pytest.mark.parametrize("mode, kind", [("120000", "blob"), ("160000", "commit"), ("100664", "blob")])
def test_a_link_or_submodule_is_refused_naming_its_path(mode: str, kind: str) -> None:
    with pytest.raises(HistoryError, match="'odd/path'"):
        parse_tree(f"{mode} {kind} {'a' * 40}\todd/path\0")


@pytest.mark.parametrize("path", ["..", "a/../b", "./a", "a//b", "/abs", "a/", ".git/config", "x/.GIT/hooks/pre",
                                  ".fslckout", "_FOSSIL_", "a\nb", "esc\x1b[2J"])
def test_a_path_that_could_leave_the_checkout_is_refused_naming_it(path: str) -> None:
    with pytest.raises(HistoryError, match="not a name a checkout may hold"):
        parse_tree(f"100644 blob {'a' * 40}\t{path}\0")


@given(st.text(max_size=80))
def test_a_tree_listing_that_is_not_gits_never_parses_into_something_else(text: str) -> None:
    try:
        files = parse_tree(text)
    except HistoryError:
        return
    assert "".join(f"{'100755' if f.executable else '100644'} blob {f.blob}\t{f.path}\0" for f in files) \
        == "".join(f"{e}\0" for e in text.split("\0") if e)


names = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30)


@given(st.dictionaries(names, st.tuples(hashes, st.booleans()), max_size=6),
       st.dictionaries(names, st.one_of(st.none(), st.tuples(hashes, st.booleans())), max_size=6))
def test_a_delta_manifest_is_its_baseline_changed(base: dict[str, tuple[str, bool]],
                                                  delta: dict[str, tuple[str, bool] | None]) -> None:
    def card(name: str, entry: tuple[str, bool] | None) -> Card:
        return Card("F", (escape(name),) if entry is None else (escape(name), entry[0], *(["x"] if entry[1] else [])))

    expected = {n: FossilFile(h, x) for n, (h, x) in base.items()}
    for name, entry in delta.items():
        if entry is None:
            expected.pop(name, None)
        else:
            expected[name] = FossilFile(*entry)
    got = files_of_cards([card(n, e) for n, e in delta.items()], [card(n, e) for n, e in base.items()])
    assert got == expected


def test_a_tree_and_a_checkin_are_the_same_files_by_content_and_bit() -> None:
    data = {"f1": b"one\n", "f2": b""}
    tree = (TreeFile("a", git_blob_hash(b"one\n", 40), False), TreeFile("b", git_blob_hash(b"", 40), True))
    assert git_blob_hash(b"", 40) == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"  # git's own empty blob
    assert same_files(tree, {"a": FossilFile("f1", False), "b": FossilFile("f2", True)}, data.__getitem__)
    assert not same_files(tree, {"a": FossilFile("f1", False), "b": FossilFile("f2", False)}, data.__getitem__)
    assert not same_files(tree, {"a": FossilFile("f2", False), "b": FossilFile("f2", True)}, data.__getitem__)
    assert not same_files(tree, {"a": FossilFile("f1", False)}, data.__getitem__)

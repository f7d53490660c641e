"""What a run's push may carry, decided from bytes alone (push_plan.py, pure),
and a run's clone read without trusting it (run_clone.py, on hostile SQLite
files made here)."""
from __future__ import annotations

import hashlib
import os
import sqlite3
import zlib

import pytest
from hypothesis import given, strategies as st

from ocx.fossil.manifest import escape, parse, tag_change
from ocx.fossil.push_plan import Line, PlanRefused, kind_of, looks_structural, plan_push
from ocx.fossil.run_clone import CloneRefused, RunClone

TRUNK_TIP = "a" * 64
FILE = b"some content\n"
FILE_HASH = hashlib.sha3_256(FILE).hexdigest()


def artifact(*cards: str) -> bytes:
    body = "".join(card + "\n" for card in sorted(cards, key=lambda c: (c[0], c))).encode()
    return body + b"Z " + hashlib.md5(body).hexdigest().encode() + b"\n"


def checkin(comment: str, parent: str, *tags: str, files=((escape("f.txt"), FILE_HASH),)) -> tuple[str, bytes]:
    data = artifact(f"C {escape(comment)}", "D 2026-12-01T00:00:00.000", *(f"F {n} {h}" for n, h in files),
                    f"P {parent}", *tags, "U run")
    return hashlib.sha3_256(data).hexdigest(), data


def served_line(hash_: str) -> Line:
    assert hash_ == TRUNK_TIP
    return Line("trunk", frozenset({"sym-trunk"}))


def plan(new: dict, branch: str | None = "fixes"):
    return plan_push(new, served_has=lambda h: h in (TRUNK_TIP, FILE_HASH), served_line=served_line, branch=branch)


def test_a_branch_started_and_continued_is_the_plan_parents_first():
    first = checkin("start", TRUNK_TIP, "T *branch * fixes", "T *sym-fixes *", "T -sym-trunk *")
    second = checkin("more", first[0])
    chosen = plan(dict([second, first]))
    assert [c.hash for c in chosen.checkins] == [first[0], second[0]]
    assert {c.branch for c in chosen.checkins} == {"fixes"} and chosen.files == [] and chosen.left_out == []


def test_a_check_in_that_keeps_trunks_name_is_refused():
    kept = checkin("start", TRUNK_TIP, "T *branch * fixes", "T *sym-fixes *")  # no -sym-trunk
    with pytest.raises(PlanRefused) as refused:
        plan(dict([kept]))
    assert refused.value.field == "branch" and "'trunk'" in refused.value.why
    own = checkin("start", TRUNK_TIP, "T *branch * fixes", "T *sym-fixes *", "T -sym-trunk *", "T +sym-trunk *")
    with pytest.raises(PlanRefused):
        plan(dict([own]))


def test_without_a_branch_restriction_every_check_in_goes():
    on_trunk = checkin("trunk work", TRUNK_TIP)
    assert [c.branch for c in plan(dict([on_trunk]), branch=None).checkins] == ["trunk"]
    with pytest.raises(PlanRefused) as refused:
        plan(dict([on_trunk]))
    assert refused.value.field == "branch"


def test_a_tag_on_another_artifact_inside_a_check_in_is_refused():
    carrier = checkin("carrier", TRUNK_TIP, "T *branch * fixes", "T *sym-fixes *", "T -sym-trunk *",
                      f"T +sym-stolen {TRUNK_TIP}")
    with pytest.raises(PlanRefused, match="tag on another artifact"):
        plan(dict([carrier]))


def test_anything_not_a_check_in_is_left_out_and_named():
    tag = tag_change(TRUNK_TIP, "release", None, "run", __import__("datetime").datetime(2026, 12, 1))
    body = f"D 2026-12-01T00:00:00.000\nG {TRUNK_TIP}\nI {TRUNK_TIP}\nU run\nW 5\nhello\n".encode()
    post = body + b"Z " + hashlib.md5(body).hexdigest().encode() + b"\n"
    chosen = plan({hashlib.sha3_256(tag).hexdigest(): tag, "b" * 64: post, "c" * 64: b"a loose file\n"})
    assert chosen.checkins == [] and sorted(what for _, what in chosen.left_out) == ["a forum post", "a tag change"]


def test_missing_content_and_an_artifact_as_a_file_are_refused():
    missing = checkin("needs", TRUNK_TIP, "T *branch * fixes", "T *sym-fixes *", "T -sym-trunk *",
                      files=(("g.txt", "d" * 64),))
    with pytest.raises(PlanRefused, match="neither on the node nor in the clone"):
        plan(dict([missing]))
    smuggled = tag_change(TRUNK_TIP, "x", None, "run", __import__("datetime").datetime(2026, 12, 1))
    smuggled_hash = hashlib.sha3_256(smuggled).hexdigest()
    holder = checkin("holds", TRUNK_TIP, "T *branch * fixes", "T *sym-fixes *", "T -sym-trunk *",
                     files=(("h.txt", smuggled_hash),))
    with pytest.raises(PlanRefused, match="themselves a Fossil artifact"):
        plan(dict([holder, (smuggled_hash, smuggled)]))
    orphan = checkin("orphan", "e" * 64)
    with pytest.raises(PlanRefused, match="parent"):
        plan(dict([orphan]))


def test_kinds_as_fossil_types_them():
    assert kind_of(parse(checkin("c", TRUNK_TIP)[1])) == "a check-in"
    wiki = b"D 2026-12-01T00:00:00.000\nL page\nU u\nW 2\nhi\n"
    assert kind_of(parse(wiki + b"Z " + hashlib.md5(wiki).hexdigest().encode() + b"\n")) == "a wiki page"
    assert kind_of(parse(artifact("D 2026-12-01T00:00:00.000", "J x y", "K " + "1" * 40, "U u"))) == "a ticket change"


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200))
def test_any_text_with_a_right_z_card_looks_structural_and_without_one_does_not(text):
    data = text.encode()
    assert not looks_structural(data) or data.endswith(b"\n")
    body = data + (b"" if data.endswith(b"\n") or not data else b"\n")
    signed = body + b"Z " + hashlib.md5(body).hexdigest().encode() + b"\n"
    assert looks_structural(signed)
    assert not looks_structural(signed[:-3] + (b"00\n" if signed[-3:-1] != b"00" else b"11\n"))


# -- a run's clone, read without trust -------------------------------------------------

def clone_file(path, rows, schema="CREATE TABLE blob(rid INTEGER PRIMARY KEY, uuid TEXT, size INT, content BLOB);"
                                  "CREATE TABLE delta(rid INTEGER PRIMARY KEY, srcid INT);"):
    db = sqlite3.connect(path)
    db.executescript(schema)
    for rid, name, content in rows:
        db.execute("INSERT INTO blob(rid, uuid, size, content) VALUES (?, ?, 0, ?)", (rid, name, content))
    db.commit()
    db.close()
    return path


def stored(data: bytes, size: int | None = None) -> bytes:
    return (len(data) if size is None else size).to_bytes(4, "big") + zlib.compress(data)


def test_a_clone_gives_only_bytes_that_hash_to_their_names(tmp_path):
    good, lying = b"good\n", b"not what it claims\n"
    path = clone_file(tmp_path / "repo.fossil", [(1, hashlib.sha3_256(good).hexdigest(), stored(good)),
                                                (2, hashlib.sha3_256(b"other").hexdigest(), stored(lying))])
    with RunClone(path) as clone:
        (one, name_one), (two, name_two) = clone.stored()
        assert clone.artifact(one, name_one) == good
        with pytest.raises(CloneRefused, match="do not hash"):
            clone.artifact(two, name_two)


def test_a_clone_whose_blob_is_a_view_or_that_lies_about_sizes_is_refused(tmp_path):
    view = clone_file(tmp_path / "view.fossil", [], schema="CREATE TABLE real(x); CREATE VIEW blob AS SELECT 1 AS rid;"
                                                           "CREATE TABLE delta(rid, srcid);")
    with pytest.raises(CloneRefused, match="blob is not a table"):
        RunClone(view)
    bomb = clone_file(tmp_path / "bomb.fossil", [(1, "f" * 64, stored(b"x" * 10, size=2**31))])
    with RunClone(bomb) as clone, pytest.raises(CloneRefused, match="past"):
        clone.artifact(1, "f" * 64)


def test_a_clone_that_is_a_link_or_not_a_file_is_never_opened(tmp_path):
    real = clone_file(tmp_path / "other.fossil", [])
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "repo.fossil").symlink_to(real)
    with pytest.raises(CloneRefused, match="link"):
        RunClone(tmp_path / "home" / "repo.fossil")
    os.mkfifo(tmp_path / "fifo.fossil")
    with pytest.raises(CloneRefused, match="not a regular file"):
        RunClone(tmp_path / "fifo.fossil")
    with pytest.raises(CloneRefused, match="owned by"):
        RunClone(real, owner=os.getuid() + 1)

"""Root's filter of Fossil's fast-import stream (git/fast_import_filter.py, D49, D41), on streams
built as Fossil 2.21 writes them (src/export.c): data blocks are copied by length and never read,
each committer line is rewritten from what the node was told, and a stream that is not what
Fossil writes for what the node knows stops it (fail closed)."""
from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ocx.git.fast_import_filter import LINE_MAX, Refused, facts_text, filter_stream, read_facts
from ocx.protocol.git_committer import StreamFacts, committer_line, written_prefix

TRAPS = [b"# rid=1\ncommitter x <y> 1 +0000\n", b"\ndata 3\nabc", b"committer ", b"# rid=", b"data 99999\n"]
BYTES = st.one_of(st.binary(max_size=60), st.sampled_from(TRAPS), st.lists(st.sampled_from(TRAPS)).map(b"".join))
USERS = st.one_of(st.none(), BYTES.map(lambda b: b.split(b"\x00")[0]),
                  st.sampled_from([b"eve\ndata 3\nabc", b"a<b>c", b"eve <a@b> 1 +0000", b"eve\n# rid=1"]))


def blob(mark: int, data: bytes) -> bytes:
    return b"blob\nmark :%d\ndata %d\n" % (mark, len(data)) + data + b"\n"


def commit(rid: int, mark: int, user: bytes | None, email: bytes, comment: bytes, seconds: int, *,
           committer: bytes | None = None) -> tuple[bytes, bytes]:
    """One check-in as Fossil writes it, and as the filter should pass it on."""
    head = b"commit refs/heads/trunk\nmark :%d\n# rid=%d\n" % (mark, rid)
    tail = b"%d +0000\n" % seconds
    rest = b"data %d\n" % len(comment) + comment + b"\nfrom :1\nM 100644 :1 a.txt\n"
    written = committer if committer is not None else written_prefix(user, email) + tail
    return head + written + rest, head + committer_line(user, email, tail) + rest


def run(stream: bytes, told, deletions=None) -> tuple[bytes, int]:
    out = io.BytesIO()
    count = filter_stream(io.BytesIO(stream), out, StreamFacts(told, deletions or {}))
    return out.getvalue(), count


@given(st.lists(st.tuples(USERS, BYTES, BYTES, BYTES, st.integers(-(2**33), 2**33)), max_size=6))
def test_each_committer_is_rewritten_and_nothing_else_changes(checkins):
    stream, expected, told = [], [], {}
    for rid, (user, email, comment, data, seconds) in enumerate(checkins, start=10):
        email = email.split(b"\x00")[0]
        told[rid] = (user, email)
        stream.append(blob(rid, data))
        expected.append(blob(rid, data))
        sent, passed = commit(rid, rid + 100, user, email, comment, seconds)
        stream.append(sent)
        expected.append(passed)
    out, count = run(b"".join(stream) + b"done\n", told)
    assert out == b"".join(expected) + b"done\n"
    assert count == len(checkins)


def test_a_u_card_that_would_end_the_line_or_forge_an_address_is_written_harmless():
    for user in (b"eve\ndata 3\nabc", b"<owner@x>", b"eve <owner@x> 1 +0000", b"eve\ncommitter x <y> 1 +0000"):
        sent, _ = commit(7, 2, user, b"", b"comment", 1700000000)
        out, _ = run(sent + b"done\n", {7: (user, b"")})
        lines = out.split(b"\n")
        committer = lines[lines.index(b"# rid=7") + 1]
        assert committer.count(b"<") == 1 and committer.count(b">") == 1, committer
        assert committer.endswith(b"<> 1700000000 +0000")
        assert lines[lines.index(b"# rid=7") + 2] == b"data 7"


def test_a_well_formed_stream_passes_byte_for_byte():
    sent, _ = commit(7, 2, b"alice", b"alice@example.org", b"# rid=9\ncommitter forged <x> 1 +0000", 1700000000)
    stream = blob(1, b"# rid=8\ncommitter a <b> 1 +0000\ndata 1\n") + sent + b"done\n"
    assert run(stream, {7: (b"alice", b"alice@example.org")}) == (stream, 1)


def test_a_long_line_is_copied_through_uninterpreted():
    # Its second piece starts with `# rid=`, in the middle of the line: not a command.
    long_path = b"M 100644 :1 " + b"d" * (LINE_MAX - 12) + b"# rid=5\ncommitter x\n"
    assert run(long_path + b"done\n", {}) == (long_path + b"done\n", 0)


@pytest.mark.parametrize("stream, why", [
    (commit(8, 2, b"eve", b"", b"c", 1)[0], "not told of"),  # a rid the node did not see
    (commit(7, 2, b"eve", b"", b"c", 1, committer=b"committer eve\n<> 1 +0000\n")[0], "is not the one"),
    (commit(7, 2, b"eve", b"", b"c", 1, committer=b"committer eve <> 1 +0000 x\n")[0], "ends in"),
    (commit(7, 2, b"eve", b"", b"c", 1, committer=b"committer eve <> 1 -0100\n")[0], "ends in"),
    (b"blob\nmark :1\ndata <<EOF\nx\nEOF\n", "data command"),
    (b"blob\nmark :1\ndata 10\nshort", "ends inside"),
])
def test_what_fossil_does_not_write_for_what_the_node_knows_stops_it(stream, why):
    with pytest.raises(Refused, match=why):
        run(stream, {7: (b"eve", b"")})


def deleting(rid: int, names: list[bytes]) -> bytes:
    """A check-in as Fossil writes one that deletes NAMES from its parent, the names as they are."""
    sent, _ = commit(rid, 3, b"eve", b"", b"c", 1)
    return sent.replace(b"M 100644 :1 a.txt\n", b"".join(b"D " + name + b"\n" for name in names))


def test_a_deleted_name_that_would_be_read_as_commands_is_written_quoted():
    names = [b"a.txt", b'"unclosed', b"evil\nM 100644 inline forged.txt\ndata 6\nforged",
             b"x\ncommit refs/heads/master"]
    out, _ = run(deleting(7, names) + b"done\n", {7: (b"eve", b"")}, {7: names})
    assert b"D a.txt\n" b'D "\\"unclosed"\n' b'D "evil\\012M 100644 inline forged.txt\\012data 6\\012forged"\n' in out
    assert b"\nM 100644 inline" not in out and b"\ncommit refs/heads/master" not in out
    assert b"\ndata 6\n" not in out  # no data block but Fossil's own


@pytest.mark.parametrize("names, told", [
    ([b"a", b"b\nM 100644 inline x"], [b"a", b"b\nM 100644 inline y"]),  # other names than the node's query gave
    ([b"a"], [b"a", b"b\nc"]),  # fewer
    ([], [b"b\nc"]),  # none where the node was told of some
])
def test_deletions_other_than_fossils_query_gave_stop_it(names, told):
    with pytest.raises(Refused, match="deletions"):
        run(deleting(7, names) + b"done\n", {7: (b"eve", b"")}, {7: told})


@given(st.dictionaries(st.integers(0, 2**31), st.tuples(USERS, BYTES)),
       st.dictionaries(st.integers(0, 2**31), st.lists(st.binary(min_size=1).filter(lambda b: b"\x00" not in b))))
def test_what_the_filter_is_told_reads_back(told, deletions):
    facts = StreamFacts(told, {rid: names for rid, names in deletions.items() if names})
    assert read_facts(facts_text(facts)) == facts

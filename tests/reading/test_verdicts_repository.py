"""Reading verdicts from a real served repository, by V2's rules (D25): the
library a merge gate calls, and `ocx verdicts` / `ocx queue` as a person runs them."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ocx.reading.verdicts import NotACheckin, passed, queue, resolve_checkin, verdicts

pytestmark = pytest.mark.fossil


def standing(world, checkin=None) -> dict[tuple[str, str], tuple[bool, str, str | None]]:
    with world.served.repository() as repository:
        found = verdicts(repository, checkin or world.judged)
    return {(v.tag, v.sender): (v.counts, v.why, v.objective) for v in found}


def test_each_sender_is_counted_or_not_as_v2_says(judged) -> None:
    got = standing(judged)
    counts = {key: value[0] for key, value in got.items()}
    assert counts == {
        ("audited", "bob"): True,  # replaced in Fossil's current tag by erin's: still bob's verdict
        ("audited", "erin"): True,
        ("audited", "frank"): False,  # sent by frank, written as carol: nobody's verdict (D21)
        ("audited", "alice"): False,  # her U card says ivan; she sent the check-in
        ("ci", "alice"): False,  # written as alice, so apart from the one written as ivan; she sent the check-in
        ("ci", "carol"): False,  # the user written in the check-in
        ("ci", "grace"): True,  # against a record listing dev
        ("ci", "henry"): False,  # against a record listing only trunk
        ("ci", "ivan"): True,  # against a record in a ticket change listing dev
        ("ci", "dave"): False,  # against a record the repository does not hold
    }  # dave's audited is absent: he cancelled his own
    assert got[("audited", "alice")][1] == "alice sent the check-in"
    assert "written as carol but received from frank" in got[("audited", "frank")][1]
    assert got[("ci", "carol")][1] == "carol is the user written in the check-in"
    assert "does not list branch dev" in got[("ci", "henry")][1]
    assert "does not hold" in got[("ci", "dave")][1]
    assert got[("ci", "grace")][2] == judged.on_dev and got[("audited", "bob")][2] == "PLAN.md"


def test_fossil_itself_shows_only_one_audited_value(judged) -> None:
    # What V2 reads past: tagxref's one current row (the last add, frank's), where ten verdicts stand.
    rows = judged.served.sql(
        "SELECT x.value FROM tagxref x JOIN tag t USING(tagid) JOIN blob b ON b.rid=x.rid"
        " WHERE t.tagname='sym-audited' AND b.uuid=?", (judged.judged,))
    assert len(rows) == 1 and "checked the edge cases" in rows[0][0]


def test_a_merge_gate_asks_for_a_counted_pass_and_no_counted_fail(judged) -> None:
    with judged.served.repository() as repository:
        assert passed(repository, judged.later)  # erin's pass, from someone else
        assert not passed(repository, judged.judged)  # erin's fail counts
        assert passed(repository, judged.judged, tags=["ci"])  # grace's and ivan's; henry's fail does not count
        assert not passed(repository, judged.plain)  # nothing at all


def test_queue_lists_the_branch_oldest_first_with_counted_verdicts_and_none(judged) -> None:
    with judged.served.repository() as repository:
        entries = queue(repository, "dev")
    assert [e.checkin for e in entries] == [judged.judged, judged.plain, judged.later]
    assert sorted((v.tag, v.sender) for v in entries[0].counted) == [
        ("audited", "bob"), ("audited", "erin"), ("ci", "grace"), ("ci", "ivan")]
    assert entries[1].counted == []
    assert [(v.sender, v.verdict.judgement.value) for v in entries[2].counted] == [("erin", "pass")]
    assert (entries[0].sender, entries[0].user) == ("alice", "carol")


def test_a_checkin_prefix_is_resolved_and_anything_else_is_named(judged) -> None:
    with judged.served.repository() as repository:
        assert resolve_checkin(repository, judged.judged[:10]) == judged.judged
        for wrong in ("0" * 10, judged.judged[:6], judged.tags["bob"][:12]):
            with pytest.raises(NotACheckin, match="^CHECKIN "):
                resolve_checkin(repository, wrong)


# -- the command line ------------------------------------------------------------------

def ocx(*args: str) -> subprocess.CompletedProcess:
    found = shutil.which("ocx") or str(Path(sys.executable).with_name("ocx"))
    return subprocess.run([found, *args], capture_output=True, text=True, timeout=60)


def test_ocx_verdicts_json_is_the_library_answer_exactly(judged) -> None:
    done = ocx("verdicts", judged.judged[:12], "-R", str(judged.path), "--json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert (answer["checkin"], answer["branch"], answer["sender"], answer["user"]) == (
        judged.judged, "dev", "alice", "carol")
    shown = {(v["tag"], v["sender"]): v for v in answer["verdicts"]}
    assert {key: v["counts"] for key, v in shown.items()} == {key: v[0] for key, v in standing(judged).items()}
    bob = shown[("audited", "bob")]
    assert (bob["value"], bob["judgement"], bob["reason"], bob["objective"], bob["against_record"], bob["artifact"]) == (
        "pass: reads well (against PLAN.md)", "pass", "reads well", "PLAN.md", False, judged.tags["bob"])
    grace = shown[("ci", "grace")]
    assert grace["against_record"] and grace["objective"] == judged.on_dev


def test_ocx_verdicts_reads_readably(judged) -> None:
    done = ocx("verdicts", judged.judged, "--repository", str(judged.path))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"check-in {judged.judged} on dev: sent by alice, user carol" in out
    assert "counts  audited bob: pass: reads well (against PLAN.md)" in out
    assert "no      ci      carol: pass: my own work (against PLAN.md)" in out
    assert "carol is the user written in the check-in" in out
    assert out.strip().endswith("4 of 10 count: failed (D25)")


def test_ocx_verdicts_names_checkin_when_it_is_unknown_or_not_a_checkin(judged) -> None:
    unknown = ocx("verdicts", "0" * 12, "-R", str(judged.path))
    assert unknown.returncode == 1 and "CHECKIN" in unknown.stderr and "no artifact" in unknown.stderr
    tag = ocx("verdicts", judged.tags["erin"][:10], "-R", str(judged.path))
    assert tag.returncode == 1 and "is not a check-in" in tag.stderr
    nowhere = ocx("verdicts", judged.judged, "-R", str(judged.path.with_name("absent.fossil")))
    assert nowhere.returncode == 1 and "cannot read repository" in nowhere.stderr


def test_ocx_queue_json_and_readable(judged) -> None:
    done = ocx("queue", "dev", "-R", str(judged.path), "--json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["branch"] == "dev" and answer["total"] == 3
    assert [(c["checkin"], len(c["counted"])) for c in answer["checkins"]] == [
        (judged.judged, 4), (judged.plain, 0), (judged.later, 1)]
    assert all(v["counts"] for c in answer["checkins"] for v in c["counted"])
    readable = ocx("queue", "dev", "-R", str(judged.path)).stdout
    assert readable.startswith("branch dev: 3 check-ins, oldest first")
    assert f"  {judged.plain[:12]}  by bob: plain.txt by bob\n      no counted verdict" in readable
    assert "audited pass by erin, against PLAN.md: fine" in readable
    empty = json.loads(ocx("queue", "no-such-branch", "-R", str(judged.path), "--json").stdout)
    assert empty == {"branch": "no-such-branch", "total": 0, "checkins": []}
    newest = json.loads(ocx("queue", "dev", "-R", str(judged.path), "--json", "--newest", "2").stdout)
    assert [c["checkin"] for c in newest["checkins"]] == [judged.plain, judged.later] and newest["total"] == 3
    assert ocx("queue", "dev", "-R", str(judged.path), "--newest", "2").stdout.startswith(
        "branch dev: the newest 2 of 3 check-ins, oldest first")

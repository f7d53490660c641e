"""tag_history returns every change of a tag on a check-in, with senders, not
only the one Fossil shows (V2, D25)."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.fossil


def test_replaced_and_cancelled_values_stay_in_the_history(served) -> None:
    checkin = served.commit("alice", "audited.txt", "judge me\n")
    first = served.clone("bob").tag(checkin, "audited", "pass: looks right (against PLAN.md)")
    second = served.clone("erin").tag(checkin, "audited", "fail: misses a case (against PLAN.md)")
    cancel = served.clone("bob").cancel_tag(checkin, "audited")
    other = served.clone("bob").tag(checkin, "ci", "pass: exit 0 (against PLAN.md)")
    # Fossil itself keeps one current row per tag and check-in.
    current = served.sql(
        "SELECT x.tagtype, x.value FROM tagxref x JOIN tag t USING(tagid) JOIN blob b ON b.rid=x.rid"
        " WHERE t.tagname='sym-audited' AND b.uuid=?",
        (checkin,),
    )
    assert current == [(0, None)]  # cancelled: nothing shows
    with served.repository() as repo:
        audited = repo.tag_history(checkin, names=["audited"])
        everything = repo.tag_history(checkin)
    assert [(c.artifact, c.op, c.value, c.sender.login, c.user) for c in audited] == [
        (first, "+", "pass: looks right (against PLAN.md)", "bob", "bob"),
        (second, "+", "fail: misses a case (against PLAN.md)", "erin", "erin"),
        (cancel, "-", None, "bob", "bob"),
    ]
    assert all(c.target == checkin for c in everything)
    # A plain check-in on trunk carries no T cards of its own (it inherits).
    assert [c.artifact for c in everything] == [first, second, cancel, other]
    assert everything[-1].name == "ci"


def test_tags_on_another_checkin_are_not_in_its_history(served) -> None:
    one = served.commit("alice", "one.txt", "1\n")
    two = served.commit("alice", "two.txt", "2\n")
    served.clone("bob").tag(one, "audited", "pass: one (against PLAN.md)")
    with served.repository() as repo:
        assert repo.tag_history(two, names=["audited"]) == []
        assert len(repo.tag_history(one, names=["audited"])) == 1


def test_branch_started_by_commit_is_read(served) -> None:
    checkin = served.commit("bob", "branch.txt", "b\n", branch="docs-sync")
    with served.repository() as repo:
        assert repo.checkin(checkin).branch == "docs-sync"
        own = [(c.name, c.op, c.value, c.sender.login) for c in repo.tag_history(checkin) if c.artifact == checkin]
    # `commit --branch` writes the branch's T cards into the check-in itself,
    # cancelling the parent's `sym-trunk`.
    assert ("branch", "*", "docs-sync", "bob") in own and ("docs-sync", "*", None, "bob") in own
    assert ("trunk", "-", None, "bob") in own


def test_a_tag_pushed_in_a_web_session_is_read_as_the_clones_tag_is(served) -> None:
    """The web page's way (D30): sync in the viewer's session, no password."""
    from ocx.fossil.web import WebError

    checkin = served.commit("alice", "by-session.txt", "judge me\n")
    with served.repository() as repo:
        project_code = repo.project_code
    by_session = served.web("bob").push_tag(checkin, "audited", "pass: read it (against PLAN.md)", project_code)
    by_clone = served.clone("erin").tag(checkin, "audited", "fail: a case (against PLAN.md)")
    with served.repository() as repo:
        changes = repo.tag_history(checkin, names=["audited"])
        assert [(c.artifact, c.name, c.op, c.value, c.sender.login, c.user) for c in changes] == [
            (by_session, "audited", "+", "pass: read it (against PLAN.md)", "bob", "bob"),
            (by_clone, "audited", "+", "fail: a case (against PLAN.md)", "erin", "erin"),
        ]
        # Both written as `fossil tag add` writes: one T card, `+sym-audited`, on the check-in.
        cards = [repo.parsed(artifact).tags for artifact in (by_session, by_clone)]
    assert [[(tag.op, tag.name, tag.target) for tag in tags] for tags in cards] == [
        [("+", "sym-audited", checkin)]] * 2
    before = served.sql("SELECT count(*) FROM blob")
    with pytest.raises(WebError, match="not authorized"):  # carol may not check in (no `i`)
        served.web("carol").push_tag(checkin, "audited", "pass: x (against PLAN.md)", project_code)
    assert served.sql("SELECT count(*) FROM blob") == before

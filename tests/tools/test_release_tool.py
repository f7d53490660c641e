"""The `release` tool with a real Fossil server (D46): `show` reads the links and writes nothing;
stage, accept and roll-back check what can be checked here and write a request as their caller in
the node's releases thread, which the node reads back as a request from that login; a dry run
says what it would write; a caller without admin or setup, a check-in with no passing ci, and a
step with nothing to move are refused naming the field. The node acting on the request is
tests/node_system/test_release_requests.py's."""
from __future__ import annotations

from pathlib import Path

import pytest

from ocx.node.releases.links import Releases
from ocx.node.releases.source import set_source
from ocx.node.releases.thread import read_request, releases_thread, unanswered
from ocx.protocol.release_request import thread_title
from ocx.tools.framework import run_tool
from ocx.tools.release import ReleaseTool
from tests.node.test_release_source import source  # noqa: F401  (a fixture: a second repository, the source)
from tests.node.test_release_staging import staged_release


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "staged").mkdir()
    return tmp_path


def call(world, root: Path, raw: dict, login: str = "admin", **options):
    """The release tool on a releases' root of the test's own, as every way in runs it (run_tool)."""
    with world.caller(login, **options) as caller:
        return run_tool(ReleaseTool(str(root)), raw, caller)


def test_show_reads_the_links_and_writes_nothing(world, root):
    before = world.snapshot()
    shown = call(world, root, {"action": "show"})
    assert shown.stopped is None and shown.result == {"node": world.node.name, "current": None, "previous": None,
                                                      "next": None, "thread": None}
    release = staged_release(root, "a" * 64)
    Releases(str(root)).offer(release)
    shown = call(world, root, {"action": "show"})
    assert shown.result["next"] == {"release": release, "checkin": "a" * 64, "digest": shown.result["next"]["digest"],
                                    "smoke": {"version": "passed"}}
    assert world.snapshot() == before


@pytest.mark.parametrize("raw, field", [
    ({"action": "accept"}, "action"),  # nothing staged
    ({"action": "rollback"}, "action"),  # nowhere to go back to
    ({"action": "stage"}, "checkin"),  # stage needs one
    ({"action": "accept", "checkin": "a" * 40}, "checkin"),  # and only stage takes one
    ({"action": "explode"}, "action"),
])
def test_what_cannot_move_is_refused_naming_the_field_and_writes_nothing(world, root, raw, field):
    before = world.snapshot()
    answer = call(world, root, raw)
    assert answer.stopped is not None and answer.stopped.field == field, answer
    assert world.snapshot() == before


def test_a_checkin_with_no_passing_ci_is_refused_naming_it(world, root):
    answer = call(world, root, {"action": "stage", "checkin": world.checkin[:12]})
    assert answer.stopped.field == "checkin" and "no counted ci verdict" in answer.stopped.why, answer


def test_a_caller_without_admin_or_setup_is_refused_even_in_a_dry_run(world, root):
    answer = call(world, root, {"action": "show", "dry_run": True}, login="alice")
    assert answer.stopped.field == "caller", answer


def test_off_its_node_the_tool_is_refused(world, root):
    answer = call(world, root, {"action": "show"}, on_node=False)
    assert answer.stopped.field == "caller" and "no node" in answer.stopped.why, answer


def test_an_accept_is_asked_on_the_record_as_its_caller_and_read_back_by_the_node(world, root):
    release = staged_release(root, "b" * 64)
    Releases(str(root)).offer(release)
    before = world.snapshot()
    dry = call(world, root, {"action": "accept", "dry_run": True})
    assert dry.stopped is None and dry.result is None and dry.log[-1].kind == "would_write", dry
    assert thread_title(world.node.name) in dry.log[-1].text and world.snapshot() == before
    asked = call(world, root, {"action": "accept"})
    assert asked.stopped is None, asked
    with world.served.repository() as repository:
        root_post = releases_thread(repository, world.node.name, world.node.node_user)
        assert root_post == asked.result  # the first request starts the thread, as its caller
        assert repository.post(asked.result).sender.login == "admin"
        read = read_request(repository, asked.result, repository.server_code)
        assert read is not None and read.refused is None and read.sender == "admin"
        assert read.request.ocx_release == "accept" and read.request.checkin is None
        assert [p.hash for p in unanswered(repository, root_post, world.node.node_user)] == [asked.result]
    again = call(world, root, {"action": "rollback", "dry_run": True})
    assert again.stopped.field == "action"  # still nowhere to roll back to: nothing moved here


def test_status_names_the_release_that_answered(world, tmp_path):
    """D46: `release` is the answering process's release, by its interpreter's prefix (here none)."""
    from ocx.tools.status import answering_release, release_of

    answer = world.run("status", {})
    assert "release" in answer.result and answer.result["release"] == answering_release() is None
    release = tmp_path / ("a" * 16 + "-" + "b" * 16)
    release.mkdir()
    (tmp_path / "current").symlink_to(release.name)
    assert release_of(str(tmp_path / "current")) == release.name and release_of(str(tmp_path)) is None


def test_a_stage_is_gated_in_the_release_source_the_node_names(world, root, source, tmp_path):  # noqa: F811
    """D45: with a repository of OCX's source named beside the configuration, a check-in is resolved and gated
    there: one with a counted ci pass there is asked by its full hash (a dry run), one of the served repository
    alone is refused, named; a source the page cannot take is left to root, which resolves only a full hash."""
    etc = tmp_path / "etc"
    set_source(world.node.name, str(source.served.path), etc)

    def stage(checkin: str):
        with world.caller("admin") as caller:
            return run_tool(ReleaseTool(str(root), etc), {"action": "stage", "checkin": checkin, "dry_run": True},
                            caller)

    asked = stage(source.passed[:12])
    assert asked.stopped is None and asked.log[-1].kind == "would_write", asked
    assert any(step.kind == "resolved" and source.passed in step.text for step in asked.log), asked  # there
    refused = stage(world.checkin[:12])
    assert refused.stopped.field == "checkin" and "is not a check-in of release_source" in refused.stopped.why
    assert stage(source.plain[:12]).stopped.field == "checkin"  # no counted ci verdict there
    set_source(world.node.name, str(tmp_path / "absent.fossil"), etc)  # not the page's to take: root gates it
    deferred = stage(source.passed)
    assert deferred.stopped is None and any("gated by the node" in step.text for step in deferred.log), deferred
    assert stage(source.passed[:12]).stopped.field == "checkin"  # only the node could resolve a prefix

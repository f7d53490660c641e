"""Runs as callers (C6, D22): a no_password run's push copies its check-ins
into the served repository as its user, refusing any on another branch
than its record's `branch` and copying nothing then; `own_thread` keeps its
posts in its record's place; the run's tool socket serves all of it.
Against a real `fossil server`, with the node's own record files."""
from __future__ import annotations

import pytest

from ocx.fossil import admin
from ocx.fossil.program import run_fossil
from ocx.fossil.sync import CallerClone
from ocx.node.record_dirs import RecordDir
from ocx.node.states import Mark
from ocx.protocol.decide import OpenRecord
from ocx.protocol.messages import Record
from ocx.tools.caller import Caller
from ocx.tools.framework import run_tool
from ocx.tools.registry import TOOLS

FIXER = "fixer-0a1b2c"


@pytest.fixture(scope="module")
def fixer(world):
    """A fixer's record, open on the node: its own login, no password, branch fixes, own thread."""
    # A former run user, holding nothing (D40); the node gives it its letters once the record is acted on.
    password = admin.create_user(world.served.path, FIXER, "", "fixer@example.org", home=world.served.home)
    created = world.run("create", {"objective": "Fix what the reviewer finds.", "budget": {"wall": "4h"},
                                   "user": FIXER, "hears": ["admin"], "remote": False,
                                   "restrict": {"no_password": True, "branch": "fixes", "own_thread": True}})
    assert created.stopped is None, created.stopped
    with world.served.repository() as repository:
        post = repository.post(created.result)
        from ocx.protocol import find_message, parse_message
        record = parse_message(find_message(post.body))
    assert isinstance(record, Record)
    RecordDir.of(world.node, created.result).save(OpenRecord(created.result, record, post.root), "forum")
    admin.set_capabilities(world.served.path, FIXER, "i4", home=world.served.home)
    home = world.served.work / "fixer-home"
    clone = CallerClone.create(home / "repo.fossil", world.served.base_url, FIXER, password, home=home,
                               save_password=False)
    checkout = clone.open_checkout(home / "checkout")
    return {"password": password, "record": created.result, "place": post.root, "clone": clone, "checkout": checkout}


def as_fixer(world, fixer, tool, raw):
    caller = Caller(FIXER, world.served.path, world.served.base_url, node=world.node, password=fixer["password"],
                    run_clone=fixer["clone"].path)
    with caller:
        return run_tool(TOOLS[tool], raw, caller)


def test_the_run_clone_holds_no_password(fixer):
    with __import__("ocx.fossil.repository", fromlist=["Repository"]).Repository(fixer["clone"].path) as clone:
        assert clone.config("last-sync-pw") is None
    assert fixer["password"].encode() not in fixer["clone"].path.read_bytes()


def test_push_copies_check_ins_on_its_branch_as_the_run_user(world, fixer):
    (fixer["checkout"] / "fix.txt").write_text("fixed\n")
    checkin = fixer["clone"].commit(fixer["checkout"], "a fix", branch="fixes", push=False)
    before = world.snapshot()
    dry = as_fixer(world, fixer, "push", {"dry_run": True})
    assert dry.stopped is None and dry.log[-1].kind == "would_write" and world.snapshot() == before
    pushed = as_fixer(world, fixer, "push", {})
    assert pushed.stopped is None, pushed.stopped
    assert pushed.result == checkin
    assert world.served.sender_by_sql(checkin)[0] == FIXER  # D21: sent as the run's user
    again = as_fixer(world, fixer, "push", {})
    assert again.stopped is None and again.result is None  # nothing new


@pytest.fixture(scope="module")
def stray(fixer):
    """A check-in on trunk in the fixer's clone, never pushed: what its push must refuse. Made
    after the tests before it in this file (they push from a clone without it), and by itself
    when a later test runs alone."""
    run_fossil(["update", "trunk"], home=fixer["clone"].home, cwd=fixer["checkout"], user=FIXER)
    (fixer["checkout"] / "elsewhere.txt").write_text("not on fixes\n")
    return fixer["clone"].commit(fixer["checkout"], "on trunk", push=False)


def test_push_on_another_branch_is_refused_and_copies_nothing(world, fixer, stray):
    before = world.snapshot()
    refused = as_fixer(world, fixer, "push", {})
    assert refused.stopped.field == "branch" and stray in refused.stopped.why
    assert world.snapshot() == before
    assert not world.served.sql("SELECT 1 FROM blob WHERE uuid=?", (stray,))


def test_own_thread(world, fixer):
    inside = as_fixer(world, fixer, "post", {"to": fixer["record"][:10], "text": "Working on it.", "dry_run": True})
    assert inside.stopped is None
    outside = as_fixer(world, fixer, "post", {"to": world.thread[:10], "text": "Elsewhere.", "dry_run": True})
    assert outside.stopped.field == "to" and "own_thread" in outside.stopped.why
    # a person posts anywhere
    assert world.run("post", {"to": world.thread, "text": "x", "dry_run": True}, login="bob").stopped is None


def test_status_of_a_run(world, fixer):
    status = as_fixer(world, fixer, "status", {}).result
    assert status["run"]["record"] == fixer["record"]
    assert status["run"]["restrict"] == {"no_password": True, "branch": "fixes", "own_thread": True}


def test_the_tool_socket_serves_the_run_as_its_user(world, fixer, stray):
    import threading

    from ocx.tool_service.tool_socket import ToolSocketServer
    from ocx.tools.socket_call import ask
    from tests.node_system.harness import wait_for

    with world.served.repository() as repository:
        code = repository.server_code
    server = ToolSocketServer(world.node, code, clones={fixer["record"]: fixer["clone"].path})
    stop = threading.Event()
    thread = threading.Thread(target=server.serve, args=(stop,), daemon=True)
    thread.start()
    path = RecordDir.of(world.node, fixer["record"]).tools / "tools.sock"
    try:
        wait_for(path.exists, 60, 0.05, "the run's tool socket")  # a thread on a busy machine: no figure
        status = ask(path, "status", {})
        assert status["result"]["login"] == FIXER and status["result"]["run"]["record"] == fixer["record"]
        assert ask(path, "post", {"to": world.thread, "text": "x"})["stopped"]["field"] == "to"
        assert ask(path, "nosuch", {})["stopped"]["field"] == "tool"
        # the refused trunk check-in is still in the clone: the socket's push refuses it too
        assert ask(path, "push", {})["stopped"]["field"] == "branch"
        reply = ask(path, "post", {"to": fixer["record"], "text": "From my socket."})
        assert reply["stopped"] is None
        assert world.served.sender_by_sql(reply["result"])[0] == FIXER
        RecordDir.of(world.node, fixer["record"]).mark(Mark.ANSWERED, {})
        wait_for(lambda: not path.exists(), 60, 0.05, "the answered run's socket gone")
    finally:
        stop.set()
        thread.join(5)

"""`push` decides from the artifacts, on the node's side (D41;
C6, D22): from a hostile run's clone it copies only check-ins on the
record's branch and the files they need, as the run's user; never an amend
moving someone's check-in, a tag, a forum post, a wiki page, a check-in
hiding its way off the branch, a file that is itself an artifact, a
check-in carrying a tag on another artifact, nor anything through a clone
that is a link. Against a real `fossil server`, each clone made as the run
user would make it, its hostile artifacts written with Fossil's own commands
(and `test-content-put` for bytes no command writes). The same attacks from
inside a real run: tests/node_system/test_push_hostile.py."""
from __future__ import annotations

import hashlib
import os
import secrets
from datetime import datetime, timezone
from pathlib import Path

import pytest

from ocx.fossil import admin
from ocx.fossil.program import run_fossil
from ocx.fossil.repository import Repository
from ocx.fossil.sync import CallerClone
from ocx.node.record_dirs import RecordDir
from ocx.protocol import find_message, parse_message
from ocx.protocol.decide import OpenRecord
from ocx.tools.caller import Caller
from ocx.tools.framework import run_tool
from ocx.tools.registry import TOOLS

RUN = "hostile-0a1b2c"


@pytest.fixture(scope="module")
def run(world):
    # D40: the record names a new user; the node's preparation then makes it with a run's letters.
    created = world.run("create", {"objective": "Fix things.", "budget": {"wall": "4h"}, "user": RUN,
                                   "hears": ["admin"], "remote": False,
                                   "restrict": {"no_password": True, "branch": "fixes"}})
    assert created.stopped is None, created.stopped
    password = admin.create_user(world.served.path, RUN, "gior234", "run", home=world.served.home)
    with world.served.repository() as repository:
        post = repository.post(created.result)
    RecordDir.of(world.node, created.result).save(
        OpenRecord(created.result, parse_message(find_message(post.body)), post.root), "forum")
    return password


def clone_of_run(world, password: str, name: str) -> tuple[CallerClone, Path]:
    """The run's clone as its preparation makes it: over HTTP as the run user, keeping no password (C6)."""
    home = world.served.work / f"run-{name}-{secrets.token_hex(2)}"
    clone = CallerClone.create(home / "repo.fossil", world.served.base_url, RUN, password, home=home,
                               save_password=False)
    return clone, clone.open_checkout(home / "checkout")


def push(world, password: str, clone: Path, dry_run: bool = False):
    caller = Caller(RUN, world.served.path, world.served.base_url, node=world.node, password=password,
                    run_clone=clone)
    with caller:
        return run_tool(TOOLS["push"], {"dry_run": dry_run}, caller)


def fossil(clone: CallerClone, *args: str, cwd: Path | None = None, input: str | None = None) -> str:
    return run_fossil([*args, *([] if cwd else ["-R", str(clone.path)])], home=clone.home, cwd=cwd, user=RUN,
                      input=input).stdout


def put_raw(clone: CallerClone, checkout: Path, data: bytes) -> str:
    """Bytes no Fossil command would write, stored in the clone as an artifact."""
    path = clone.home / f"raw-{secrets.token_hex(4)}"
    path.write_bytes(data)
    fossil(clone, "test-content-put", str(path), cwd=checkout)
    return hashlib.sha3_256(data).hexdigest()


def artifact(cards: list[str], wiki: str | None = None) -> bytes:
    """Cards in order, a W card's text after the cards before Z, and Z."""
    body = "".join(line + "\n" for line in cards)
    if wiki is not None:
        body += f"W {len(wiki.encode())}\n{wiki}\n"
    data = body.encode()
    return data + b"Z " + hashlib.md5(data).hexdigest().encode() + b"\n"


def forum_reply(root: str, text: str) -> bytes:
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000")
    return artifact([f"D {stamp}", f"G {root}", f"I {root}", "N text/x-markdown", f"U {RUN}"], text)


def held(world, hashes: list[str]) -> set[str]:
    with world.served.repository() as served:
        return served.holding(hashes)


def commit(clone: CallerClone, checkout: Path, name: str, branch: str | None = None) -> str:
    """A check-in of a new file NAME; on BRANCH, its tip when the clone has it already."""
    if branch is not None and branch in fossil(clone, "branch", "list").split():
        run_fossil(["update", branch], home=clone.home, cwd=checkout, user=RUN)
        branch = None
    (checkout / name).write_text(f"{name}\n")
    return clone.commit(checkout, f"{name} by the run", branch=branch, push=False)


def test_only_the_check_in_on_its_branch_leaves_the_run(world, run):
    clone, checkout = clone_of_run(world, run, "mixed")
    alice = world.checkin
    good = commit(clone, checkout, "fix.txt", "fixes")
    fossil(clone, "amend", alice, "--branch", "stolen")  # moves alice's check-in
    fossil(clone, "tag", "add", "release", alice)
    (clone.home / "page.md").write_text("# Hostile\n")
    fossil(clone, "wiki", "create", "hostile-page", str(clone.home / "page.md"), "--mimetype", "text/x-markdown")
    post = put_raw(clone, checkout, forum_reply(world.thread, "Posted past own_thread, as the run."))
    with Repository(clone.path) as own:
        everything_new = [h for (h,) in own._rows("SELECT uuid FROM blob")]
    before, held_before = world.snapshot(), held(world, everything_new)
    dry = push(world, run, clone.path, dry_run=True)
    assert dry.stopped is None and world.snapshot() == before
    left = " ".join(step.text for step in dry.log)
    assert "a tag change" in left and "a wiki page" in left and "a forum post" in left
    pushed = push(world, run, clone.path)
    assert pushed.stopped is None and pushed.result == good, pushed
    assert world.served.sender_by_sql(good)[0] == RUN
    with world.served.repository() as served:
        assert served.checkin(good).branch == "fixes"
        assert served.checkin(alice).branch == "trunk"  # the amend stayed in the clone
        assert not served.tag_history(alice, ["release"]) and not served.wiki_versions("hostile-page")
        assert post not in {p.hash for p in served.thread(world.thread)}
        file_hash = served.parsed(good).all("F")
    arrived = held(world, everything_new) - held_before
    # what the push brought: the check-in and its new file, nothing else
    assert arrived == {good, *(c.args[1] for c in file_hash if c.args[0] == "fix.txt")}


def test_a_check_in_off_its_branch_hidden_among_good_ones_stops_the_whole_push(world, run):
    clone, checkout = clone_of_run(world, run, "hidden")
    first = commit(clone, checkout, "one.txt", "fixes")
    run_fossil(["update", "trunk"], home=clone.home, cwd=checkout, user=RUN)
    stray = commit(clone, checkout, "stray.txt")
    last = commit(clone, checkout, "two.txt", "fixes")  # on fixes again, after the stray one
    before = world.snapshot()
    refused = push(world, run, clone.path)
    assert refused.stopped.field == "branch" and stray in refused.stopped.why, refused
    assert world.snapshot() == before and not held(world, [first, stray, last])


def test_a_check_in_that_would_answer_to_trunk_never_leaves(world, run):
    """On branch fixes by its branch tag, yet carrying `sym-trunk` (its parent
    moved off trunk in the clone, so its branch card cancels the wrong name):
    `fossil update trunk` would find it. Refused whole."""
    clone, checkout = clone_of_run(world, run, "named")
    run_fossil(["update", "trunk"], home=clone.home, cwd=checkout, user=RUN)
    tip = fossil(clone, "info", "current", cwd=checkout).split()[1]
    fossil(clone, "amend", tip, "--branch", "elsewhere")
    (checkout / "named.txt").write_text("named\n")
    fossil(clone, "add", "named.txt", cwd=checkout)
    out = fossil(clone, "commit", "-m", "named trunk", "--branch", "fixes", "--force", "--no-warnings", cwd=checkout)
    named = out.split("New_Version: ")[1].split()[0]
    before = world.snapshot()
    refused = push(world, run, clone.path)
    assert refused.stopped.field == "branch" and "'trunk'" in refused.stopped.why, refused
    assert world.snapshot() == before and not held(world, [named])


def test_a_file_that_is_itself_an_artifact_never_leaves(world, run):
    clone, checkout = clone_of_run(world, run, "smuggled")
    commit(clone, checkout, "before.txt", "fixes")
    (checkout / "note.txt").write_bytes(forum_reply(world.thread, "Smuggled as a file."))
    smuggling = clone.commit(checkout, "a note", push=False)
    before = world.snapshot()
    refused = push(world, run, clone.path)
    assert refused.stopped.field == "caller" and "themselves a Fossil artifact" in refused.stopped.why, refused
    assert world.snapshot() == before and not held(world, [smuggling])


def test_a_check_in_carrying_a_tag_on_another_artifact_never_leaves(world, run):
    clone, checkout = clone_of_run(world, run, "carrier")
    good = commit(clone, checkout, "carrier.txt", "fixes")
    with Repository(clone.path) as own:
        text = own.artifact(good).decode()
    lines = text.splitlines()[:-1]  # without Z
    lines.append(f"T +sym-stolen {world.checkin}")
    lines.sort(key=lambda line: (line[0], line))  # Fossil's card order
    carrier = put_raw(clone, checkout, artifact(lines))
    before = world.snapshot()
    refused = push(world, run, clone.path)
    assert refused.stopped.field == "caller" and "tag on another artifact" in refused.stopped.why, refused
    assert world.snapshot() == before and not held(world, [carrier, good])


@pytest.mark.parametrize("kind", ["symlink", "hard link", "fifo"])
def test_a_clone_that_is_not_the_runs_own_file_is_never_read(world, run, kind, tmp_path):
    other, checkout = clone_of_run(world, run, f"other-{kind.replace(' ', '')}")
    theirs = commit(other, checkout, "theirs.txt", "fixes")
    own = tmp_path / "home" / "repo.fossil"
    own.parent.mkdir()
    if kind == "symlink":
        own.symlink_to(other.path)
    elif kind == "hard link":
        os.link(other.path, own)
    else:
        os.mkfifo(own)
    before = world.snapshot()
    refused = push(world, run, own)
    assert refused.stopped.field == "caller" and "clone" in refused.stopped.why, refused
    assert world.snapshot() == before and not held(world, [theirs])


def test_a_line_of_check_ins_lands_in_one_push(world, run):
    """Many check-ins in one push, the later ones on fixes by inheritance: each lands there, as the run."""
    clone, checkout = clone_of_run(world, run, "line")
    hashes = [commit(clone, checkout, "start.txt", "fixes")]
    for n in range(40):
        (checkout / "line.txt").write_text(f"{n}\n")
        hashes.append(clone.commit(checkout, f"line {n}", push=False))
    pushed = push(world, run, clone.path)
    assert pushed.stopped is None and pushed.result == hashes[-1], pushed
    with world.served.repository() as served:
        assert [(served.checkin(h).branch, served.sender(h).login) for h in hashes] == [("fixes", RUN)] * len(hashes)

"""The way back (D50): `ocx git import` turns the new commits of a git branch
into check-ins of the person's own Fossil clone, which their own `fossil
push` then sends as them (D21). Nothing here talks to the node.

Which commits are new. `fossil git export` ends every commit's message with
`FossilOrigin-Name: HASH` (history.ORIGIN_TRAILER): walking the branch from
its tip by first parents, the first commit that names a check-in the clone
holds is the base; the commits above it are the candidates, oldest first.
A candidate already in Fossil is a primary child of its parent's check-in
with the same comment and the same files (names, contents, executable
bits): so a second run makes nothing, and neither does a run after the
check-ins came back through the mirror under other git hashes.

The base's files must be its check-in's (anyone may write the trailer).
Refused, naming what: a branch with no such base (its history is not the
mirror's); a base the clone lacks (pull first); a merge commit, a symbolic
link or submodule, an empty message among the candidates; a Fossil branch
that moved on (its check-in is no longer a leaf) or a new branch whose name
Fossil already holds elsewhere.

Branches: the git branch `main_branch` (`fossil git export`'s default,
`master`) is Fossil's trunk; any other keeps its name, a new branch when the
base is on another. The check-ins are made in a private checkout in a fresh
temporary directory: the person's own checkout is never touched.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ..fossil.checkin_writes import PrivateCheckout, fossil_date
from ..fossil.lineage import CloneLineage, FossilFile
from ..protocol.errors import OcxError
from .history import Commit, GitRepository, TreeFile

MAIN_BRANCH = "master"


class ImportRefused(OcxError, ValueError):
    """The branch cannot come back as it is: the message names the commit, check-in or branch why."""


@dataclass(frozen=True)
class Step:
    commit: Commit
    tree: tuple[TreeFile, ...]
    found: str | None  # the check-in already holding this commit, or None: to be made
    new_branch: str | None = None  # the Fossil branch this check-in starts


@dataclass(frozen=True)
class Plan:
    git_branch: str
    fossil_branch: str
    base: str  # the check-in the first candidate grows from
    login: str  # the clone's own user: whom the check-ins are by (D21)
    steps: tuple[Step, ...]

    @property
    def to_make(self) -> tuple[Step, ...]:
        return tuple(step for step in self.steps if step.found is None)


def git_blob_hash(data: bytes, digits: int) -> str:
    """The hash git gives a blob of DATA (SHA-1, or SHA-256 in a repository of 64-digit names)."""
    digest = hashlib.sha1() if digits == 40 else hashlib.sha256()
    digest.update(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


def same_files(tree: tuple[TreeFile, ...], files: dict[str, FossilFile], content: Callable[[str], bytes]) -> bool:
    """Whether git's TREE and a check-in's FILES hold the same names, contents and executable bits."""
    if {f.path for f in tree} != set(files):
        return False
    return all(files[f.path].executable == f.executable
               and git_blob_hash(content(files[f.path].hash), len(f.blob)) == f.blob for f in tree)


def clone_login(clone: CloneLineage) -> str:
    """The login the clone syncs as (its sync URL's): whom its push is sent by, so whom the check-ins are by
    (D21). A `default-user` naming someone else is refused: Fossil would write that name in them."""
    sync_login = unquote(urlsplit(clone.config("last-sync-url") or "").username or "")
    if not sync_login:
        raise ImportRefused(f"{clone.path}: its sync URL names no login; clone it as `fossil clone"
                            f" http://LOGIN@HOST/ FILE` (or `fossil remote` so) to push as yourself")
    default = clone.config("default-user")
    if default and default != sync_login:
        raise ImportRefused(f"{clone.path}: its default user {default!r} is not {sync_login!r}, the login it"
                            f" pushes as; check-ins must be by who sends them (D21)")
    return sync_login


def _candidates(git: GitRepository, clone: CloneLineage, tip: str) -> tuple[str, list[Commit]]:
    """The base check-in and the commits above it, newest first (module doc)."""
    above: list[Commit] = []
    for commit in git.newest_first(tip):
        origin = commit.origin
        if origin is not None:
            if not clone.holding([origin]):
                raise ImportRefused(f"commit {commit.hash[:12]} was exported from check-in {origin[:12]}, which"
                                    f" your Fossil clone lacks: `fossil pull` first")
            # Anyone may write the trailer: a base whose files are not its check-in's would slip its
            # differences into the first new check-in, unlisted.
            if not same_files(tuple(git.tree(commit.hash)), clone.files_of(origin), clone.content):
                raise ImportRefused(f"commit {commit.hash[:12]} names check-in {origin[:12]} but its files are"
                                    f" not that check-in's: it is not the mirror's")
            return origin, above
        if len(commit.parents) > 1:
            raise ImportRefused(f"commit {commit.hash[:12]} is a merge; merges are not imported:"
                                f" rebase the branch onto one line")
        if not commit.message.strip():
            raise ImportRefused(f"commit {commit.hash[:12]} has an empty message; a check-in needs a comment")
        above.append(commit)
    raise ImportRefused(f"commit {tip[:12]}: no commit below it was exported from Fossil"
                        f" (no `FossilOrigin-Name:` line); the branch is not based on the node's mirror")


def plan(git: GitRepository, clone: CloneLineage, branch: str, main_branch: str = MAIN_BRANCH) -> Plan:
    """What importing BRANCH would make, and what is there already (module doc)."""
    login = clone_login(clone)
    fossil_branch = "trunk" if branch == main_branch else branch
    base, newest_first = _candidates(git, clone, git.branch_tip(branch))
    steps: list[Step] = []
    parent: str | None = base
    for commit in reversed(newest_first):
        tree = tuple(git.tree(commit.hash))
        found = _already_made(clone, parent, commit, tree) if parent is not None else None
        steps.append(Step(commit, tree, found))
        parent = found
    first_new = next((at for at, step in enumerate(steps) if step.found is None), None)
    if first_new is not None:
        grows_from = steps[first_new - 1].found if first_new else base
        assert grows_from is not None
        steps[first_new] = Step(steps[first_new].commit, steps[first_new].tree, None,
                                _new_branch(clone, grows_from, fossil_branch))
    return Plan(branch, fossil_branch, base, login, tuple(steps))


def _already_made(clone: CloneLineage, parent: str, commit: Commit, tree: tuple[TreeFile, ...]) -> str | None:
    for child in clone.children(parent):
        if clone.checkin(child).comment.strip() == commit.message.strip() \
                and same_files(tree, clone.files_of(child), clone.content):
            return child
    return None


def _new_branch(clone: CloneLineage, parent: str, fossil_branch: str) -> str | None:
    """None when PARENT's branch is FOSSIL_BRANCH and may grow; the branch's name when it starts there."""
    if clone.checkin(parent).branch == fossil_branch:
        if not clone.is_leaf(parent):
            raise ImportRefused(f"Fossil's branch {fossil_branch!r} moved on past check-in {parent[:12]}:"
                                f" `fossil pull`, `git fetch`, rebase the branch onto it, and import again")
        return None
    if clone.branch_size(fossil_branch):
        raise ImportRefused(f"Fossil already has a branch {fossil_branch!r} that check-in {parent[:12]} is not on:"
                            f" rename the git branch")
    return fossil_branch


def apply(plan_: Plan, git: GitRepository, clone_path: Path, clone: CloneLineage,
          made: Callable[[Step, str], None] = lambda _step, _hash: None) -> list[str]:
    """Make the plan's new check-ins in order, in a private checkout; MADE is told of each."""
    steps = plan_.to_make
    if not steps:
        return []
    first = plan_.steps.index(steps[0])
    parent = plan_.steps[first - 1].found if first else plan_.base
    assert parent is not None
    hashes: list[str] = []
    work = Path(tempfile.mkdtemp(prefix="ocx-git-import-"))  # 0700: this user's alone
    try:
        checkout = PrivateCheckout.open(clone_path, work / "checkout", parent, home=work / "home",
                                        login=plan_.login)
        try:
            managed = set(clone.files_of(parent))
            for step in steps:
                _clear(checkout.directory)
                git.write_tree(step.commit.hash, checkout.directory, work / "index")
                wanted = {f.path for f in step.tree}
                checkout.remove(sorted(managed - wanted))
                checkout.add(sorted(wanted - managed))
                message = work / "message"
                # git ends every message with a newline, Fossil's comments end with their text.
                message.write_text(step.commit.message.rstrip(), encoding="utf-8")
                hashes.append(checkout.commit(message, branch=step.new_branch,
                                              date=fossil_date(step.commit.author_time)))
                made(step, hashes[-1])
                managed = wanted
        finally:
            checkout.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return hashes


def _clear(directory: Path) -> None:
    """Everything in the checkout but Fossil's own file, links removed as links (never followed)."""
    for entry in os.scandir(directory):
        if entry.name in (".fslckout", "_FOSSIL_"):
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)

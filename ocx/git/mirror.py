"""The git repository the node serves at /ext/git (D49), and its notes.

Two repositories, both the node's (root's):

  WORK    where `fossil git export` writes (fossil/git_export.py), with the
          export's state; in the node's state, root's only; the notes are
          written here too.
  SERVED  a bare repository the Fossil server's account reads (git
          http-backend, page/git_door.py), in a directory of root's that only
          that account's group may enter; no run can write or read it on
          disk (node/config.py own_paths).

A fetch never sees a half-written ref: SERVED changes only by one `git
fetch --atomic` from WORK, which brings the objects in first and then moves
every ref in one transaction; an update that fails leaves SERVED as it was.
"""
from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path

from .program import run_git

NOTES_REF = "refs/notes/ocx"
NOTES_AUTHOR = "OCX <ocx@localhost>"
REFSPECS = ("+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*", "+refs/notes/*:refs/notes/*")


def write_notes(work: Path, notes: Mapping[str, str], *, home: Path) -> bool:
    """`refs/notes/ocx` in WORK made to hold exactly NOTES (git commit -> text), as one new
    notes commit, only when they differ from what it holds; whether it wrote one."""
    held = run_git(["notes", f"--ref={NOTES_REF}", "list"], home=home, cwd=work, check=False)
    have: dict[str, str] = {}
    for line in held.stdout.splitlines():
        blob, _, commit = line.partition(" ")
        have[commit] = blob
    wanted = {commit: text for commit, text in notes.items() if text}
    if set(have) == set(wanted):
        shown = run_git(["cat-file", "--batch"], home=home, cwd=work,
                        input="".join(blob + "\n" for blob in have.values())) if have else None
        if shown is None or _same(shown.stdout, have, wanted):
            return False
    parent = run_git(["rev-parse", "--verify", "-q", NOTES_REF], home=home, cwd=work, check=False).stdout.strip()
    message = b"OCX: the counted verdicts of each check-in (D25, D49)\n"
    stream = [f"commit {NOTES_REF}\n".encode(),
              f"committer {NOTES_AUTHOR} {int(time.time())} +0000\n".encode(),
              f"data {len(message)}\n".encode() + message]
    if parent:
        stream.append(f"from {parent}\n".encode())
    stream.append(b"deleteall\n")
    for commit, text in sorted(wanted.items()):
        data = text.encode()
        stream.append(f"N inline {commit}\ndata {len(data)}\n".encode() + data + b"\n")
    stream.append(b"done\n")
    run_git(["fast-import", "--quiet", "--done", "--force"], home=home, cwd=work, input=b"".join(stream))
    return True


LEAF_PREFIX = "refs/heads/fossil-leaf/"


def keep_leaves(work: Path, leaves: Mapping[str, str], *, home: Path) -> None:
    """A branch `fossil-leaf/HASH12` in WORK for each Fossil leaf (Fossil hash -> git commit) that
    no branch of the export points to: a fork of a Fossil branch, or a check-in dated before its
    branch's newest, which `fossil git export` leaves out of every ref (git's branch holds one
    head); the ones no longer leaves removed. So a clone holds every check-in."""
    listed = run_git(["for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/"], home=home, cwd=work).stdout
    heads: set[str] = set()
    kept: dict[str, str] = {}
    for line in listed.splitlines():
        commit, _, ref = line.partition(" ")
        if ref.startswith(LEAF_PREFIX):
            kept[ref] = commit
        else:
            heads.add(commit)
    wanted = {LEAF_PREFIX + fossil[:12]: commit for fossil, commit in leaves.items() if commit not in heads}
    commands = [f"delete {ref}\n" for ref in kept if ref not in wanted]
    commands += [f"update {ref} {commit}\n" for ref, commit in sorted(wanted.items()) if kept.get(ref) != commit]
    if commands:
        run_git(["update-ref", "--stdin"], home=home, cwd=work, input="".join(commands))


def _same(batch: str, have: Mapping[str, str], wanted: Mapping[str, str]) -> bool:
    """Whether the notes `git cat-file --batch` showed (for HAVE's blobs, in order) are WANTED's texts."""
    texts: dict[str, str] = {}
    rest = batch
    for commit, blob in have.items():
        header, _, rest = rest.partition("\n")
        size = int(header.split()[2])
        texts[commit] = rest[:size]
        rest = rest[size + 1:]
        if not header.startswith(blob):
            return False
    return texts == dict(wanted)


def make_served(served: Path, group: int, *, home: Path) -> None:
    """SERVED made, once: a bare repository in a directory root owns and GROUP may enter."""
    parent = served.parent
    parent.mkdir(parents=True, exist_ok=True)
    os.chown(parent, 0, group)
    os.chmod(parent, 0o750)
    if not (served / "HEAD").exists():
        run_git(["init", "--bare", "-q", str(served)], home=home)


def publish(work: Path, served: Path, *, home: Path) -> None:
    """SERVED brought to WORK's branches, tags and notes in one atomic fetch (module doc),
    its HEAD naming the branch WORK's HEAD names (Fossil's trunk)."""
    run_git(["fetch", "--atomic", "--prune", "--no-write-fetch-head", "-q", str(work), *REFSPECS],
            home=home, cwd=served, timeout=600.0)
    head = run_git(["symbolic-ref", "-q", "HEAD"], home=home, cwd=work, check=False).stdout.strip()
    if not head.startswith("refs/heads/") or run_git(["rev-parse", "-q", "--verify", head], home=home, cwd=served,
                                                      check=False).returncode != 0:
        # No trunk (Fossil's trunk is git's `master`): the branch of the newest commit, as a clone checks out.
        head = run_git(["for-each-ref", "--sort=-committerdate", "--count=1", "--format=%(refname)", "refs/heads/"],
                       home=home, cwd=served).stdout.strip()
    if head.startswith("refs/heads/"):
        run_git(["symbolic-ref", "HEAD", head], home=home, cwd=served)

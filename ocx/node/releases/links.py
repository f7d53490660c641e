"""The releases' root and its three links, moved so that a node killed at any
step is found consistent when it comes back (D46, D47).

Every change of the links is written first as an intent (`moving.json`:
the links before and after), then made one link at a time, each by a new
link renamed over the old one, then the intent removed. `recover`, run by
the node before it serves, completes an intent whose releases are all there
and undoes any other, and removes a copy left half-made (`.ID.partial`). So
links never dangle, and no service is pointed at a release that is not whole:
a release is renamed to its name only after its copy's digest was checked.

Root's code: `staged/` is read as the build user's (tree.py; D41, D48).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ...files import write_atomically
from ...protocol.errors import OcxError
from .tree import copy_tree, tree_digest

LINKS = ("current", "previous", "next")
STAGED = "staged"
PREVIEWS = "preview"  # ROOT/preview/ID: root's copy of the release `next` names, made at stage (preview.py)
MOVING = "moving.json"
_ID = re.compile(r"[0-9a-f]{16}-[0-9a-f]{16}", re.ASCII)  # check-in, then the files' digest (D45)
_HEX = re.compile(r"[0-9a-f]{40,64}", re.ASCII)
_RECORD_MAX = 64 << 10
KEEP = 3  # releases kept besides those a link, a unit or an open record names (D47)


class ReleaseError(OcxError, ValueError):
    """A release that cannot be accepted, rolled back to or read: the message names why."""


def release_id(checkin: str, digest: str) -> str:
    """A release's name: its check-in's and its files' digest's first 16 hex digits each (D45)."""
    if not _HEX.fullmatch(checkin):
        raise ReleaseError(f"checkin: {checkin[:80]!r} is not a check-in's full hash")
    if not _HEX.fullmatch(digest):
        raise ReleaseError(f"digest: {digest[:80]!r} is not a sha256 digest")
    return f"{checkin[:16]}-{digest[:16]}"


@dataclass(frozen=True)
class Staged:
    """What the build recorded beside a staged release (staged/ID.json)."""

    release: str
    checkin: str
    digest: str
    smoke: dict[str, str]


def _roots_directory(path: str) -> bool:
    """A directory (not a link to one) that root owns."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()


def never_cut(step: str) -> None:
    """Where a test cuts a move short, as a kill would (tests/node/test_releases.py)."""


class Releases:
    """The releases' root at ROOT (host_paths.RELEASES_DIRECTORY)."""

    def __init__(self, root: str, cut: Callable[[str], None] = never_cut) -> None:
        self.root = root
        self.cut = cut

    # -- reading --------------------------------------------------------------

    def link(self, name: str) -> str | None:
        """The release a link names (its ID), or None when the link is not there."""
        try:
            target = os.readlink(os.path.join(self.root, name))
        except (FileNotFoundError, OSError):
            return None
        release = os.path.basename(target)
        return release if _ID.fullmatch(release) else None

    def links(self) -> dict[str, str | None]:
        return {name: self.link(name) for name in LINKS}

    def accepted(self) -> list[str]:
        """The releases root holds, oldest accepted first."""
        names = [n for n in os.listdir(self.root) if _ID.fullmatch(n)]
        return sorted(names, key=lambda n: os.stat(os.path.join(self.root, n), follow_symlinks=False).st_mtime)

    def staged(self, release: str) -> Staged:
        """staged/RELEASE.json, read as a run's bytes: no link followed, at most 64 KiB."""
        if not _ID.fullmatch(release):
            raise ReleaseError(f"release: {release[:80]!r} is not a release's name")
        directory = os.open(os.path.join(self.root, STAGED), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            fd = os.open(f"{release}.json", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=directory)
        except OSError as error:  # not there, or a link (ELOOP): the build writes neither
            raise ReleaseError(f"release: {release} was not staged ({os.strerror(error.errno or 0)})") from None
        finally:
            os.close(directory)
        with os.fdopen(fd, "rb") as record:
            data = record.read(_RECORD_MAX + 1)
        try:
            if len(data) > _RECORD_MAX:
                raise ValueError("too long")
            fields = json.loads(data)
            staged = Staged(release=release, checkin=str(fields["checkin"]), digest=str(fields["digest"]),
                            smoke={str(k): str(v) for k, v in dict(fields.get("smoke", {})).items()})
        except (ValueError, TypeError, KeyError):
            raise ReleaseError(f"release: {release}'s staged record is not one the build writes") from None
        if release_id(staged.checkin, staged.digest) != release:
            raise ReleaseError(f"release: {release} is not named by its check-in and digest")
        return staged

    def copy_made_at_stage(self, release: str) -> str | None:
        """ROOT/preview/RELEASE when it is a directory of root's (not a link): the copy stage made."""
        path = os.path.join(self.root, PREVIEWS, release)
        return path if _roots_directory(path) else None

    # -- moving ---------------------------------------------------------------

    def offer(self, release: str) -> None:
        """`next` names a staged release (after its smoke passed, D45)."""
        self.staged(release)
        self._move({"next": release})

    def accept(self) -> str:
        """Make `next` `current` (the old one `previous`) as root's own copy whose digest, computed
        again, is the one staged: the preview's copy when stage made one, else a copy out of staged/.
        Returns the release accepted."""
        links = self.links()
        release = links["next"]
        if release is None:
            raise ReleaseError("next: nothing is staged")
        if release == links["current"]:
            raise ReleaseError(f"next: {release} is current already")  # D46: accept stops
        staged = self.staged(release)
        home = os.path.join(self.root, release)
        preview = self.copy_made_at_stage(release)
        if not os.path.isdir(home) and preview is not None:
            # Root's copy made at stage (preview.py), which the build user never could write: checked
            # again, then renamed on the same filesystem, so staged/ is not read a second time (D46, D48).
            if tree_digest(preview) != staged.digest:
                raise ReleaseError(f"digest: {release}'s copy made at stage is not what was staged")
            self.cut("copied")
            os.rename(preview, home)
            os.utime(home)  # accepted now: `accepted` orders by it
        elif not os.path.isdir(home):
            partial = os.path.join(self.root, f".{release}.partial")
            shutil.rmtree(partial, ignore_errors=True)
            self.cut("copy")
            digest = copy_tree(os.path.join(self.root, STAGED, release), partial)
            if digest != staged.digest:
                shutil.rmtree(partial, ignore_errors=True)
                raise ReleaseError(f"digest: {release}'s files changed after staging")
            self.cut("copied")
            os.rename(partial, home)
        elif tree_digest(home) != staged.digest:
            raise ReleaseError(f"digest: {release}'s accepted copy is not what was staged")
        self._move({"current": release, "previous": links["current"], "next": None})
        return release

    def rollback(self) -> str:
        """`previous` becomes `current` and `current` `previous`. Returns the release now current."""
        links = self.links()
        back = links["previous"]
        if back is None:
            raise ReleaseError("previous: there is no release to roll back to")
        self._move({"current": back, "previous": links["current"]})
        return back

    def _move(self, new: dict[str, str | None]) -> None:
        old = {name: self.link(name) for name in new}
        write_atomically(os.path.join(self.root, MOVING), json.dumps({"old": old, "new": new}), 0o644)
        self.cut("intent")
        self._set(new)
        self.cut("links")
        os.unlink(os.path.join(self.root, MOVING))

    def _set(self, links: dict[str, str | None]) -> None:
        for name, release in links.items():
            self.cut(name)
            path = os.path.join(self.root, name)
            if release is None:
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass
                continue
            temporary = os.path.join(self.root, f".{name}.link")
            try:
                os.unlink(temporary)
            except FileNotFoundError:
                pass
            os.symlink(f"{STAGED}/{release}" if name == "next" else release, temporary)
            os.replace(temporary, path)

    # -- coming back ----------------------------------------------------------

    def recover(self) -> None:
        """Make the root consistent after a kill at any step (module doc)."""
        for name in os.listdir(self.root):
            if name.endswith(".partial") or name.endswith(".link"):
                path = os.path.join(self.root, name)
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path)
                else:
                    os.unlink(path)
        moving = os.path.join(self.root, MOVING)
        try:
            with open(moving, "rb") as intent:
                move = json.loads(intent.read(_RECORD_MAX))
        except FileNotFoundError:
            move = None
        if move is not None:
            new, old = dict(move["new"]), dict(move["old"])
            self._set(new if all(self._whole(name, r) for name, r in new.items()) else old)
            os.unlink(moving)
        for name in LINKS:  # a link to a release since removed: none is better than a dangling one
            release = self.link(name)
            if os.path.lexists(os.path.join(self.root, name)) and (release is None or not self._whole(name, release)):
                os.unlink(os.path.join(self.root, name))

    def _whole(self, link: str, release: str | None) -> bool:
        if release is None:
            return True
        where = os.path.join(self.root, STAGED, release) if link == "next" else os.path.join(self.root, release)
        return os.path.isdir(where) and not os.path.islink(where)

    def removable(self, named: Iterable[str]) -> list[str]:
        """The accepted releases nothing names (a link, a unit or an open record, D47) beyond the
        KEEP last accepted besides."""
        keep = set(named) | {r for r in self.links().values() if r is not None}
        unnamed = [r for r in self.accepted() if r not in keep]
        return unnamed[:-KEEP] if len(unnamed) > KEEP else []

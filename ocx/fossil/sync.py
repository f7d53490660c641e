"""Writes that reach the served repository by sync, as the caller: a clone of
the caller's own, pushed with the caller's login, so the server records the
caller as the SENDER (rcvfrom; D21, D22). Used for tags (verdicts, V1) and
check-ins; forum posts and ticket changes go through web.py.

The password is given to Fossil once, at its own prompt on a terminal only
OCX holds (program.run_fossil_with_password), never in a URL on a command
line, where every process could read it in /proc (D41); answering yes to its
question keeps it, obscured, in the clone (`last-sync-pw`), and later pushes
and pulls use it from there. Pushing anything by sync needs `i` on the
server (fossil-facts.md).
"""
from __future__ import annotations

import re
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple  # not dataclasses (program.py)

from ocx.fossil.fossil_failure import FossilError
from ocx.fossil.program import run_fossil, run_fossil_with_password

if TYPE_CHECKING:  # imported when first read (_repository)
    from ocx.fossil.repository import Repository

_NEW_VERSION = re.compile(r"^New_Version: ([0-9a-f]{40,64})$", re.MULTILINE)
# What `fossil update` prints of a file when it only writes what the version holds (2.21, update.c).
_PLAIN_UPDATE = re.compile(r"^(ADD|UPDATE|REMOVE) \S.*$|^RENAME \S.* -> \S.*$", re.ASCII)


def pristine_update(stdout: str, stderr: str) -> bool:
    """Whether Fossil's update of a checkout nobody edited made the version exactly: each file
    added, updated, removed or renamed, nothing kept, merged or left in the way. A check-in's link,
    written as a plain file where links are not allowed, reads as edited locally: Fossil keeps it
    and cannot write the next version's files beneath it ("CONFLICT", "in the way", seen on 2.21)."""
    files = re.split(r"^-{20,}$", stdout, maxsplit=1, flags=re.MULTILINE)[0]  # the summary follows
    return (not stderr.strip() and "WARNING" not in stdout and " - overwrites " not in files
            and all(_PLAIN_UPDATE.match(line) for line in files.splitlines() if line.strip()))


def login_url(base_url: str, login: str) -> str:
    """BASE_URL naming LOGIN and no password: Fossil asks for it (D41)."""
    parts = urllib.parse.urlsplit(base_url)
    netloc = f"{urllib.parse.quote(login, safe='')}@{parts.hostname}"
    if parts.port:
        netloc += f":{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path or "/", "", ""))


def _repository(path: Path) -> Repository:
    """The clone's reader, imported when first read: a run's preparation (run_steps/prepare.py) reads none."""
    from ocx.fossil.repository import Repository

    return Repository(path)


class CallerClone(NamedTuple):
    """A clone file that syncs with the server as LOGIN."""

    path: Path
    login: str
    home: Path

    @classmethod
    def create(cls, path: Path | str, base_url: str, login: str, password: str, *, home: Path | str,
               save_password: bool = True, autosync: str = "off") -> CallerClone:
        """Clone BASE_URL over HTTP as LOGIN (needs `g`) into PATH; autosync off
        unless told (fossil-facts.md: a program drives it). Without SAVE_PASSWORD the clone
        keeps no password of the server's (C6 `no_password`; its own user row
        gets a random local one from Fossil)."""
        path, home = Path(path), Path(home)
        try:
            run_fossil_with_password(["clone", login_url(base_url, login), str(path)], password, home=home,
                                     remember=save_password, user=login)
        except FossilError as exc:
            raise FossilError(["clone", base_url], exc.returncode, "", exc.stderr.replace(password, "***"),
                              cause=exc.cause) from None
        clone = cls(path, login, home)
        clone._fossil("settings", "autosync", autosync)
        return clone

    def _fossil(self, *args: str, cwd: Path | None = None) -> str:
        in_checkout = cwd is not None
        repository = [] if in_checkout else ["-R", str(self.path)]
        return run_fossil([*args, *repository], home=self.home, cwd=cwd, user=self.login).stdout

    def set_setting(self, name: str, value: str) -> None:
        self._fossil("settings", name, value)

    def pull(self) -> None:
        self._fossil("pull")

    def push(self) -> None:
        """Send everything new in the clone to the server, as LOGIN."""
        out = self._fossil("push")
        # Fossil may exit 0 and still report the server refused the push.
        if "not authorized to write" in out or "Error:" in out:
            raise FossilError(["push"], 0, out, "the server refused the push")

    def _write_one(self, event_type: str, args: list[str], input: str | None = None) -> str:
        """Run a local write in the clone, push it, and return the hash of the
        one artifact of EVENT_TYPE it made (a local write is a receipt too)."""
        with _repository(self.path) as clone:
            before = clone.max_rcvid()
        run_fossil([*args, "-R", str(self.path)], home=self.home, user=self.login, input=input)
        with _repository(self.path) as clone:
            written = [
                a.hash for r in clone.receipts_since(before) for a in r.artifacts if a.event_type == event_type
            ]
        if len(written) != 1:
            raise FossilError(args[:2], 0, "", f"expected one new artifact of type {event_type}, found {len(written)}")
        self.push()
        return written[0]

    def _tag(self, subcommand: list[str], user_override: str | None) -> str:
        override = ["--user-override", user_override] if user_override else []
        return self._write_one("g", ["tag", *subcommand, *override])

    def write_wiki(self, name: str, content: str, *, mimetype: str = "text/x-markdown") -> str:
        """Write a new version of wiki page NAME (e.g. `sandbox/claude`, D14)
        and push it; return the version's full hash."""
        self.pull()
        with _repository(self.path) as clone:
            exists = bool(clone.wiki_versions(name))
        verb = "commit" if exists else "create"
        return self._write_one("w", ["wiki", verb, name, "--mimetype", mimetype], input=content)

    def tag(self, checkin: str, name: str, value: str | None = None, *, user_override: str | None = None) -> str:
        """Add tag NAME (stored as `sym-NAME`) with VALUE on CHECKIN, push it;
        return the tag change's full hash. USER_OVERRIDE forges the U card
        (for tests: the sender stays LOGIN)."""
        self.pull()
        return self._tag(["add", name, checkin, *([value] if value is not None else [])], user_override)

    def cancel_tag(self, checkin: str, name: str, *, user_override: str | None = None) -> str:
        self.pull()
        return self._tag(["cancel", name, checkin], user_override)

    # -- check-ins ----------------------------------------------------------------

    def open_checkout(self, directory: Path | str, version: str | None = None, *, settings: bool = True) -> Path:
        """A checkout of VERSION (a check-in's hash; the tip by default).
        Without SETTINGS, the clone already holds `mtime-changes off` (copies.py)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self._fossil("open", "--force", "--nosync", str(self.path), *([version] if version else []), cwd=directory)
        if settings:
            # Fossil notices edits by mtime; a program edits faster than a second,
            # and Fossil then refuses the commit (R card mismatch): hash instead.
            self._fossil("settings", "mtime-changes", "off")
        return directory

    def update_checkout(self, directory: Path | str, version: str) -> Path:
        """Move the pristine checkout in DIRECTORY to VERSION, without a sync: Fossil rewrites only
        the files that differ (node/spare.py: a checkout made ahead, moved to a check-in). Raises
        FossilError unless Fossil says it made VERSION exactly (`pristine_update`)."""
        done = run_fossil(["update", "--nosync", version], home=self.home, cwd=Path(directory), user=self.login)
        if not pristine_update(done.stdout, done.stderr):
            raise FossilError(["update", version], 0, done.stdout, "the checkout is not the check-in's exactly")
        return Path(directory)

    def commit(
        self,
        checkout: Path | str,
        message: str,
        *,
        branch: str | None = None,
        user_override: str | None = None,
        push: bool = True,
    ) -> str:
        """Commit every change in CHECKOUT (new files added, missing removed),
        push unless told not to; return the check-in's full hash."""
        checkout = Path(checkout)
        self._fossil("addremove", cwd=checkout)
        extra = (["--branch", branch] if branch else []) + (["--user-override", user_override] if user_override else [])
        out = self._fossil("commit", "-m", message, "--no-warnings", *extra, cwd=checkout)
        match = _NEW_VERSION.search(out)
        if match is None:
            raise FossilError(["commit"], 0, out, "no New_Version in commit output")
        if push:
            self.push()
        return match.group(1)

"""A real `fossil server` on 127.0.0.1 for the Fossil layer's tests: a fresh
repository per test module, an admin and a few logins with known passwords,
torn down after the module. Nothing of Fossil is mocked."""
from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ocx.fossil import admin
from ocx.fossil.program import FossilServer, run_fossil, serve
from ocx.fossil.repository import Repository
from ocx.fossil.sync import CallerClone
from ocx.fossil.web import WebSession

# login -> its own letters. Every login also gets nobody's `gjorz` and, once
# logged in, anonymous's `hmnc` (fossil-facts.md).
LOGINS = {
    "alice": "i4",  # checks in, posts unmoderated
    "bob": "i4",
    "carol": "3",  # posts held for moderation, cannot push
    "dave": "u",  # the reader row's letters
    "erin": "v",  # the developer row's letters
}

if shutil.which("fossil") is None:  # pragma: no cover - the image has it
    pytest.skip("Debian's fossil is not installed", allow_module_level=True)


@dataclass
class Served:
    path: Path
    home: Path
    work: Path
    server: FossilServer
    passwords: dict[str, str]
    _clones: dict[str, CallerClone] = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def repository(self) -> Repository:
        return Repository(self.path)

    def web(self, login: str) -> WebSession:
        return WebSession(self.base_url, login, self.passwords[login])

    def clone(self, login: str) -> CallerClone:
        if login not in self._clones:
            self._clones[login] = CallerClone.create(
                self.work / f"{login}.fossil", self.base_url, login, self.passwords[login],
                home=self.work / f"home-{login}",
            )
        return self._clones[login]

    def checkout(self, login: str) -> Path:
        directory = self.work / f"checkout-{login}"
        if not (directory / ".fslckout").exists():
            self.clone(login).open_checkout(directory)
        return directory

    def commit(self, login: str, filename: str, text: str, **options) -> str:
        directory = self.checkout(login)
        self.clone(login).pull()
        # Every commit starts from trunk's tip, whatever an earlier one branched.
        run_fossil(["update", "trunk"], home=self.work / f"home-{login}", cwd=directory, user=login)
        (directory / filename).write_text(text)
        return self.clone(login).commit(directory, f"{filename} by {login}", **options)

    def sender_by_sql(self, hash_: str) -> tuple[str | None, str | None]:
        """The SENDER as fossil-facts.md gives the SQL: independent of ocx."""
        db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        try:
            row = db.execute(
                "SELECT u.login, r.ipaddr FROM blob b LEFT JOIN rcvfrom r ON r.rcvid=b.rcvid"
                " LEFT JOIN user u ON u.uid=r.uid WHERE b.uuid=?",
                (hash_,),
            ).fetchone()
        finally:
            db.close()
        assert row is not None, f"{hash_} is not in the server's repository"
        return row

    def sql(self, query: str, params: tuple = ()) -> list[tuple]:
        db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        try:
            return db.execute(query, params).fetchall()
        finally:
            db.close()


def start_served(base: Path, logins: dict[str, str] = LOGINS, *, backoffice: bool = False) -> Served:
    home, work = base / "home", base / "work"
    work.mkdir(parents=True)
    path = base / "served.fossil"
    passwords = {"admin": admin.new_repository(path, "admin", home=home)}
    if not backoffice:
        # Fossil's backoffice detaches (its own session) and waits out a 60 s
        # lease after the server stops; these tests need no hooks.
        admin.set_setting(path, "backoffice-disable", "on", home=home)
    for login, letters in logins.items():
        passwords[login] = admin.create_user(path, login, letters, f"{login}@example.org", home=home)
    server = serve(path, home=home)
    return Served(path, home, work, server, passwords)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One repository and server per test module; tests in a module share it
    and must not depend on each other's writes."""
    running = start_served(tmp_path_factory.mktemp("served"))
    try:
        yield running
    finally:
        running.server.stop()


def before_crosslink(repository: Path, post: str, copy: Path) -> Path:
    """COPY of REPOSITORY as it is in the moment Fossil 2.21's forum form has stored POST's blob and
    not yet crosslinked it (no `event`, no `forumpost` row): that moment, kept (Repository.unsettled)."""
    shutil.copyfile(repository, copy)
    db = sqlite3.connect(copy)
    try:
        with db:
            db.execute("DELETE FROM event WHERE objid=(SELECT rid FROM blob WHERE uuid=?)", (post,))
            db.execute("DELETE FROM forumpost WHERE fpid=(SELECT rid FROM blob WHERE uuid=?)", (post,))
    finally:
        db.close()
    return copy

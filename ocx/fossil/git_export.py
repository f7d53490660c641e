"""The node's git export (D49): `fossil git export` from a copy of the served
repository that the node owns, so what a login wrote in its contact info
never reaches the export (protocol/git_mirror.py, D49).

    served repository --pull--> COPY (node's, root's only) --git export--> WORK (a git repository)

The copy is a clone of the served file, brought up to date by `fossil pull`
from it (incremental: what arrived, not history; no private artifact, D28).
Fossil clones a file by copying its bytes under no lock, so the first copy
clones a snapshot of it instead (Repository.copy_to: SQLite's backup, a read
lock for the 0.1 s the copy takes), never a commit half written.
Before each export the copy's user table is written from the served one's
logins with the addresses the author rule allows, and nothing else of it
counts: the export reads contact info from there alone.

Fossil 2.21's export is incremental by time: it sends the check-ins dated
after the newest it sent before (`mconfig.start` in WORK/.mirror_state/db),
so a check-in that arrives dated earlier (a person's commit pushed a day
later) would never reach the mirror. So `start` is moved back, before each
export, to just before the earliest check-in the export has not sent
(`mmark` holds every one it sent), and only then.

A check-in's U card, file names and branch are anyone's to write (D21),
and Fossil writes them into git's stream as they are. So before each
export the node learns from the copy what Fossil will write for each
check-in it has not sent (`stream_facts`), and the export runs a `git` of
root's first in PATH that checks Fossil's stream against it and writes
only lines no login can forge (git/fast_import_filter.py, D41).
"""
from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from ..protocol.git_committer import StreamFacts, fossil_email, manifest_user, needs_quoting
from .program import run_fossil
from .repository import Repository

_HASHES = re.compile(rb"[0-9a-f]{40,64}:[0-9a-f]{40,64}")  # two artifact hashes, as blob.uuid holds them

EXPORT_SECONDS = 600.0  # a first export of a long history (click.fossil: about 25 s)
GIT_EXPORT = "git export".split()  # `fossil git export`: Fossil's command (the guard reads a list's "git" as git's)
COPY_USER = "root"  # the copy's own user: a local pull names no login (the served file is read directly)
_EARLIER = 1e-6  # a julian day's part: well under a second, above its float's rounding


def _quoted(text: str) -> str:
    """TEXT as an SQL string literal (no NUL: a login or address holds none, by its rule)."""
    return "'" + text.replace("\x00", "").replace("'", "''") + "'"


def keep_copy(served: Path, copy: Path, *, home: Path) -> None:
    """COPY made as a clone of SERVED, or brought up to date from it (module doc)."""
    if copy.exists():
        run_fossil(["pull", str(served.resolve()), "-R", str(copy)], home=home, user=COPY_USER,
                   timeout=EXPORT_SECONDS)
        return
    # Fossil clones a file by copying it without a lock: it clones a snapshot taken under one instead.
    making, snapshot = copy.with_name(copy.name + ".new"), copy.with_name(copy.name + ".snapshot")
    copy.parent.mkdir(parents=True, exist_ok=True)
    for stale in (making, snapshot):
        stale.unlink(missing_ok=True)
    with Repository(served) as repository:
        repository.copy_to(snapshot)
    try:
        run_fossil(["clone", str(snapshot), str(making)], home=home, user=COPY_USER, timeout=EXPORT_SECONDS)
    finally:
        snapshot.unlink(missing_ok=True)
    making.rename(copy)


def authors_script(addresses: Mapping[str, str], mirror_db: Path | None) -> str:
    """The SQL run on the copy before an export: every login there with the address the
    rule gave it (none: ""), and the export's start moved back (module doc)."""
    # fx_git (a git import's table) would give the export addresses of its own: the user table alone counts.
    # Fossil's clone of a file keeps every login's password hash and login cookie: the copy needs neither.
    lines = ["BEGIN;", "DROP TABLE IF EXISTS fx_git;", "UPDATE user SET info='', pw='', cookie=NULL, cexpire=NULL;"]
    for login, address in sorted(addresses.items()):
        lines.append(f"INSERT OR IGNORE INTO user(login, pw, cap, info) VALUES({_quoted(login)}, '', '', '');")
        lines.append(f"UPDATE user SET info={_quoted(address)} WHERE login={_quoted(login)};")
    lines.append("COMMIT;")
    if mirror_db is not None:
        unsent = ("(SELECT min(event.mtime) FROM event JOIN blob ON blob.rid=event.objid WHERE event.type='ci'"
                  " AND blob.uuid NOT IN (SELECT uuid FROM mirror.mmark WHERE isfile=0))")
        lines += [f"ATTACH {_quoted(str(mirror_db))} AS mirror;",
                  f"UPDATE mirror.mconfig SET value={unsent} - {_EARLIER} WHERE key='start' AND value > {unsent};",
                  "DETACH mirror;"]
    return "\n".join(lines) + "\n"


def _sql_rows(copy: Path, statements: list[str], *, home: Path, mirror_db: Path | None) -> Iterator[list[bytes]]:
    """The rows of STATEMENTS (each `SELECT KIND, KEY, HEX`) run by `fossil sql` on COPY, written to a
    file in HOME (root's) and read one at a time: the manifests they read are runs'."""
    rows = home / "export-facts.txt"
    rows.unlink(missing_ok=True)
    script = [".mode list", ".headers off", ".separator ' '", f".output {rows}"]
    if mirror_db is not None:
        script.append(f"ATTACH {_quoted(str(mirror_db))} AS mirror;")
    run_fossil(["sql", "-R", str(copy)], input="\n".join([*script, *statements, ".output stdout"]) + "\n",
               home=home, user=COPY_USER, timeout=EXPORT_SECONDS)
    try:
        with rows.open("rb") as lines:
            for line in lines:
                yield line.rstrip(b"\n").split(b" ")
    finally:
        rows.unlink(missing_ok=True)


def stream_facts(copy: Path, work: Path, *, home: Path) -> StreamFacts:
    """What Fossil's export will write for each check-in of COPY it has not sent (the ones it may
    send now, their unsent ancestors among them): the user and address of its committer line, its
    manifest's U card (protocol/git_committer.py) and the copy's user table by Fossil's rule; and
    where a file it deletes has a name git would misread, the names of its `D` lines, by Fossil's
    own query (src/export.c) against its primary parent."""
    mirror_db = work / ".mirror_state" / "db"
    marked = _has_marks(mirror_db)  # no table: an export that never completed (Fossil rolled it back)
    sent = "SELECT uuid FROM mirror.mmark WHERE isfile=0" if marked else "SELECT NULL WHERE 0"
    unsent = f"event.type='ci' AND blob.uuid NOT IN ({sent})"
    statements = [
        "SELECT 'u', hex(login), CASE WHEN info IS NULL THEN '-' ELSE hex(info) END FROM user;",
        f"SELECT 'c', blob.rid, hex(content(blob.uuid)) FROM event JOIN blob ON blob.rid=event.objid WHERE {unsent};",
        "SELECT 'n', count(*), '' FROM filename WHERE instr(name, char(10))>0 OR substr(name, 1, 1)='\"';",
        "SELECT 'p', blob.rid, parent.uuid || ':' || blob.uuid FROM event JOIN blob ON blob.rid=event.objid"
        " JOIN plink ON plink.cid=blob.rid AND plink.isprim JOIN blob AS parent ON parent.rid=plink.pid"
        f" WHERE {unsent};"]
    infos: dict[bytes, bytes | None] = {}
    facts = StreamFacts()
    parents: dict[int, tuple[str, str]] = {}
    misread = 0
    for kind, key, value in _sql_rows(copy, statements, home=home, mirror_db=mirror_db if marked else None):
        if kind == b"u":
            infos[bytes.fromhex(key.decode())] = None if value == b"-" else bytes.fromhex(value.decode())
        elif kind == b"c":
            user = manifest_user(bytes.fromhex(value.decode()))
            facts.committers[int(key)] = (user, fossil_email(user, None if user is None else infos.get(user)))
        elif kind == b"n":
            misread = int(key)
        elif kind == b"p" and _HASHES.fullmatch(value):
            parent, child = value.decode().split(":")
            parents[int(key)] = (parent, child)
    if misread and parents:  # none in almost every repository: no file of any check-in is read
        _add_deletions(copy, parents, facts, home=home)
    return facts


def _add_deletions(copy: Path, parents: Mapping[int, tuple[str, str]], facts: StreamFacts, *, home: Path) -> None:
    """FACTS' deletions: for each check-in of PARENTS (rid -> its primary parent's and its own hash),
    the names Fossil's export deletes, in its order, where one of them needs quoting."""
    # Fossil's own statement (gitmirror_send_checkin), its rows in the order it gives them.
    statements = [f"SELECT 'd', {rid}, hex(filename) FROM (SELECT filename FROM files_of_checkin('{parent}')"
                  f" EXCEPT SELECT filename FROM files_of_checkin('{child}'));"
                  for rid, (parent, child) in sorted(parents.items())]
    found: dict[int, list[bytes]] = {}
    for _, rid, name in _sql_rows(copy, statements, home=home, mirror_db=None):
        found.setdefault(int(rid), []).append(bytes.fromhex(name.decode()))
    facts.deletions.update({rid: names for rid, names in found.items() if any(map(needs_quoting, names))})


def export(copy: Path, work: Path, addresses: Mapping[str, str], *, home: Path,
           git_first: Callable[[StreamFacts], Path] | None = None) -> str:
    """WORK brought up to date from COPY by `fossil git export`, its authors by ADDRESSES
    (login -> address, protocol/git_mirror.py); returns what the export said. GIT_FIRST: given
    what the export will write (stream_facts), the directory whose `git` the export runs (git/fast_import_filter.py);
    None: the system's git, Fossil's own export (tests showing what it does)."""
    mirror_db = work / ".mirror_state" / "db"
    run_fossil(["sql", "-R", str(copy)], input=authors_script(addresses, mirror_db if _has_marks(mirror_db) else None),
               home=home, user=COPY_USER)
    path_first = git_first(stream_facts(copy, work, home=home)) if git_first is not None else None
    done = run_fossil([*GIT_EXPORT, str(work), "-R", str(copy)], home=home, user=COPY_USER,
                      timeout=EXPORT_SECONDS, path_first=path_first)
    return done.stdout


def _has_marks(mirror_db: Path) -> bool:
    """Whether the export's state MIRROR_DB holds its marks (and its config) yet."""
    if not mirror_db.exists():
        return False
    connection = sqlite3.connect(f"file:{mirror_db}?mode=ro", uri=True)
    try:
        found = connection.execute("SELECT count(*) FROM sqlite_master WHERE name IN ('mmark', 'mconfig')").fetchone()
        return bool(found == (2,))
    finally:
        connection.close()


def leaves(copy: Path) -> list[str]:
    """The check-ins (Fossil hashes) with no child in COPY: Fossil's leaves, forks of a branch too."""
    connection = sqlite3.connect(f"file:{copy}?mode=ro", uri=True)
    try:
        rows = connection.execute("SELECT blob.uuid FROM leaf JOIN blob ON blob.rid=leaf.rid").fetchall()
    finally:
        connection.close()
    return sorted(str(row[0]) for row in rows)


def exported_commits(work: Path) -> dict[str, str]:
    """Each exported check-in's git commit: Fossil hash -> git hash, from the export's own marks."""
    path = work / ".mirror_state" / "db"
    if not path.exists():
        return {}
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = connection.execute("SELECT uuid, githash FROM mmark WHERE isfile=0 AND githash IS NOT NULL").fetchall()
    finally:
        connection.close()
    return {str(uuid): str(githash) for uuid, githash in rows}

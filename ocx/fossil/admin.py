"""Acting on a served repository file as its administrator, only through the
`fossil` CLI (D21: never a raw SQL write behind Fossil's back).

Passwords go to Fossil on standard input, never in argv: program.py runs
`fossil` without a controlling terminal, so Fossil's password prompt reads
stdin. They are random (os.urandom, as `secrets.token_hex` is, without
importing `secrets` and its hashlib on every run's preparation) and
returned to the caller, who alone decides where they are kept (D19, D20).
Writes made here are local CLI writes: Fossil starts no backoffice for them
and records their sender as the repository's first setup user (D26,
fossil-facts.md), so nothing here writes an artifact a node must attribute.
"""
from __future__ import annotations

import os
from pathlib import Path

from ocx.fossil.program import run_fossil

PASSWORD_BYTES = 16


def random_password() -> str:
    return os.urandom(PASSWORD_BYTES).hex()


def new_repository(path: Path | str, admin_login: str, *, home: Path | str) -> str:
    """Make a new repository at PATH whose setup user is ADMIN_LOGIN; return
    that user's new random password.

    `fossil new` stores its first password in clear text and prints it; it is
    replaced at once by a random one, which Fossil stores hashed.
    """
    run_fossil(["new", "--admin-user", admin_login, str(path)], home=home)
    return set_random_password(path, admin_login, home=home)


def create_user(
    repository: Path | str,
    login: str,
    capabilities: str,
    contact: str,
    *,
    home: Path | str,
    password: str | None = None,
) -> str:
    """Create LOGIN with exactly CAPABILITIES; return its password: PASSWORD, or a random one.

    Fossil gives a new user its `default-perms` (`u`) for the instant before
    its letters are set; nothing can log in as it before the password is known.
    """
    password = password or random_password()
    run_fossil(
        ["user", "new", login, contact, "-R", str(repository)],
        home=home,
        input=f"{password}\n{password}\n",
    )
    set_capabilities(repository, login, capabilities, home=home)
    return password


def set_capabilities(repository: Path | str, login: str, letters: str, *, home: Path | str) -> None:
    """Give LOGIN exactly LETTERS (its `user.cap`; C5, D19)."""
    run_fossil(["user", "capabilities", login, letters, "-R", str(repository)], home=home)


def withdraw_capabilities(repository: Path | str, login: str, *, home: Path | str) -> None:
    """Leave LOGIN with no letters of its own (C4: after the response). It
    still holds `nobody`'s and `anonymous`'s, as every login does."""
    set_capabilities(repository, login, "", home=home)


def set_contact(repository: Path | str, login: str, contact: str, *, home: Path | str) -> None:
    """LOGIN's contact information (`user.info`): where the server's node
    remembers what a login is to OCX (a node user's registration, the node a
    run user works for; D36, D37). It is not synced to clones."""
    run_fossil(["user", "contact", login, contact, "-R", str(repository)], home=home)


def set_password(repository: Path | str, login: str, password: str, *, home: Path | str) -> None:
    run_fossil(
        ["user", "password", login, "-R", str(repository)],
        home=home,
        input=f"{password}\n{password}\n",
    )


def set_random_password(repository: Path | str, login: str, *, home: Path | str) -> str:
    password = random_password()
    set_password(repository, login, password, home=home)
    return password


def set_setting(repository: Path | str, name: str, value: str, *, home: Path | str) -> None:
    """A repository setting, e.g. `backoffice-logfile` (fossil-facts.md)."""
    run_fossil(["settings", name, value, "-R", str(repository)], home=home)


def shun(repository: Path | str, hashes: list[str], *, home: Path | str) -> None:
    """Shun HASHES as Fossil's /shun page does (shun.c: a row of `shun`, the time `now()`): its
    server then never sends them to a clone or a pull, and drops them pushed again. Fossil 2.21
    has no command for it, so `fossil sql` writes that row and nothing else (D21's spirit: no
    artifact, no derived table touched; the content goes at the next `fossil rebuild`)."""
    if not hashes or not all(len(h) in (40, 64) and set(h) <= set("0123456789abcdef") for h in hashes):
        raise ValueError(f"not full hashes: {hashes!r}")
    rows = ", ".join(f"('{h}', now())" for h in hashes)
    run_fossil(["sql", "-R", str(repository)], home=home,
               input=f"INSERT OR IGNORE INTO shun(uuid, mtime) VALUES {rows};\n")


def start_hooks_from_now(repository: Path | str, *, home: Path | str) -> bool:
    """Fossil's after-receive hooks told only of what the repository receives from now on: its
    `hook-last-rcvid` set to the newest receipt, where no hook has run yet (absent). Left alone,
    the first backoffice gives a hook every artifact received within a day of the newest (hook.c
    `hook_changes`), describing each inside one write transaction: on an adopted history received
    within the day (click.fossil with 20,000 posts: 30,000 artifacts, 35 s of CPU) the served
    repository refused clones meanwhile. The node's hook only wakes it (D26), and the node reads
    its receipts from its own mark (D2), so the backlog is nobody's. Whether it was set now."""
    said = run_fossil(["sql", "-R", str(repository)], home=home,
                      input="INSERT OR IGNORE INTO config(name, value, mtime)"
                            " SELECT 'hook-last-rcvid', CAST(coalesce(max(rcvid), 0) AS TEXT), now() FROM rcvfrom;\n"
                            "SELECT changes();\n").stdout.strip()
    return said in ("1", "'1'")


def allow_http_authentication(repository: Path | str, *, home: Path | str) -> bool:
    """Fossil's `http_authentication_ok`: a request's HTTP Basic authorization logs its login in, as
    Fossil's own login would, so a git client can fetch /ext/git as a login (D49). Fossil 2.21 has
    it in its config table only, with no command that sets it: `fossil sql` writes that row alone.
    Whether it was off before."""
    said = run_fossil(["sql", "-R", str(repository)], home=home,
                      input="SELECT value FROM config WHERE name='http_authentication_ok';\n").stdout.strip()
    if said in ("1", "'1'"):
        return False
    run_fossil(["sql", "-R", str(repository)], home=home,
               input="REPLACE INTO config(name, value, mtime) VALUES('http_authentication_ok', '1', now());\n")
    return True


def plan_pull_answers(repository: Path | str, *, home: Path | str) -> bool:
    """SQLite's statistics for the table `unclustered` where it has none (`ANALYZE unclustered`);
    whether they were made now. Fossil's server answers each pull with the artifacts no cluster
    names yet (xfer.c, send_unclustered: `unclustered JOIN blob`). With no statistics, SQLite
    walks all of blob's hash index for it, looking each one up in unclustered: on click.fossil
    with 20,000 posts (39,000 artifacts, 27 unclustered) 28 to 44 ms of the server's CPU for
    every pull, growing with the history. With them it walks unclustered (a few hundred rows at
    most between clusters) and looks each up in blob: 0.3 ms. blob keeps no statistics, so
    SQLite's guess for it (a million rows) stays above any count unclustered can record, and the
    plan holds as both grow; once made, Fossil's own `PRAGMA optimize` at each close keeps them
    current. Only that table: OCX reads none of it, so no query of OCX's changes its plan. As
    `shun`, D21's spirit: no artifact and no table of Fossil's touched, only SQLite's own
    statistics, which `fossil rebuild --analyze` also makes."""
    counted = "SELECT count(*) FROM sqlite_stat1 WHERE tbl='unclustered';\n"
    said = run_fossil(["sql", "-R", str(repository)], home=home,
                      input="SELECT count(*) FROM sqlite_schema WHERE name='sqlite_stat1';\n").stdout.strip()
    if said == "1" and run_fossil(["sql", "-R", str(repository)], home=home, input=counted).stdout.strip() != "0":
        return False
    # An empty table gets no row (a repository with no artifact yet): nothing made, and tried again next time.
    said = run_fossil(["sql", "-R", str(repository)], home=home, input="ANALYZE unclustered;\n" + counted).stdout
    return said.strip() != "0"

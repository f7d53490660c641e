"""A clone the node keeps current, and each run's own copy of it (D16, C5, C6; docs/node.md,
'The run's clone is a copy').

A clone over HTTP costs Fossil's client a rebuild of every artifact it
receives: 1.88 s of CPU for click.fossil's 3,335 check-ins, 48 s for a burst
of 30. So the node keeps one clone, made over HTTP as its node user, and
pulls it as that user when receipts arrive. It holds what a run user would
clone: both read everything public and nothing private (neither holds `x`,
D19, D20), and it keeps no password (Fossil is told not to remember it).

The node pulls into the template itself, and a copy of it is taken holding
SQLite's shared lock (shared_lock.py), so Fossil commits a pull only between
copies and every copy is one committed version, whole. (It pulled into a
copy of the template and renamed that into place before 2026-12-07: every
pull then wrote the whole history out again, 30 MB for click.fossil with
20,000 posts, and Fossil's commit waited for the disk to take it, about
130 ms of the 250 a command record's check-in waited for its pull;
bench/checkin_pull.py.)

Each run's copy is made its own by Fossil itself, before the run can read
it: a new server-code (C1: a copy would share one), the clone's own login
row made the run user's (its U cards, as a clone's first user; setup in
the clone only, as Fossil gives a clone's maker), the server's URL naming
the run user, autosync as asked, and, when the run may hold its password,
that password saved by Fossil's own prompt on a terminal only OCX holds
(program.run_fossil_with_password: never in argv, D41).
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from ocx.fossil.fossil_failure import FossilError
from ocx.fossil.program import run_fossil, run_fossil_with_password
from ocx.fossil.shared_lock import shared
from ocx.fossil.sync import CallerClone, login_url


def _sql(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def make_template(path: Path, base_url: str, login: str, password: str, *, home: Path) -> None:
    """Clone BASE_URL over HTTP as LOGIN into PATH, remembering no password."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.new")
    partial.unlink(missing_ok=True)
    try:
        run_fossil_with_password(["clone", login_url(base_url, login), str(partial)], password, home=home,
                                 remember=False, user=login)
        run_fossil(["settings", "autosync", "off", "-R", str(partial)], home=home, user=login)
        # Every run's clone is a copy of this one: its pushes send what no cluster names yet by the
        # query a server answers pulls with, planned the same way. Imported here, where a runs' clone
        # is made, not on a preparation's way (run_steps/prepare.py imports this module).
        from ocx.fossil.admin import plan_pull_answers

        plan_pull_answers(partial, home=home)
    except FossilError as exc:
        partial.unlink(missing_ok=True)
        raise FossilError(["clone", base_url], exc.returncode, "", exc.stderr.replace(password, "***"),
                          cause=exc.cause) from None
    os.chmod(partial, 0o600)
    os.replace(partial, path)


def refresh_template(path: Path, base_url: str, login: str, password: str, *, home: Path) -> None:
    """Pull everything new into PATH as LOGIN, in place: copies are taken between its commits (module doc)."""
    try:
        run_fossil_with_password(["pull", login_url(base_url, login), "-R", str(path)], password, home=home,
                                 remember=False, user=login)
    except FossilError as exc:
        raise FossilError(["pull", base_url], exc.returncode, "", exc.stderr.replace(password, "***"),
                          cause=exc.cause) from None


def copy_for_run(template: Path, path: Path, base_url: str, login: str, password: str | None = None, *,
                 home: Path, autosync: str) -> CallerClone:
    """The run's own clone at PATH, from a copy of TEMPLATE (module doc). With
    PASSWORD None it keeps none (C6 `no_password`), or is given it later
    (`remember_password`)."""
    copy_bytes(template, path)
    clone = make_own(path, base_url, login, home=home, autosync=autosync)
    if password is not None:
        remember_password(clone, base_url, password)
    return clone


def copy_bytes(template: Path, path: Path) -> None:
    """PATH, a byte copy of this version of TEMPLATE, 0600: not yet anyone's (make_own). In the
    kernel, no byte through Python: copy_file_range, which a filesystem with shared extents (XFS,
    btrfs) makes a copy-on-write clone of no cost whatever the history's size; sendfile where the
    kernel will not (another filesystem, an old kernel)."""
    with open(template, "rb") as source, shared(source.fileno(), template):  # no commit meanwhile (module doc)
        with open(path, "wb") as target:
            os.fchmod(target.fileno(), 0o600)
            size, done = os.fstat(source.fileno()).st_size, 0
            copy = _copy_range
            while done < size:
                try:
                    sent = copy(source.fileno(), target.fileno(), done, size - done)
                except OSError as refused:
                    if copy is not _copy_range or done or refused.errno not in _NO_COPY_RANGE:
                        raise
                    copy = _send
                    continue
                if sent == 0:
                    raise FossilError(["copy", str(template)], 0, "", "the node's clone ended early")
                done += sent


# What copy_changed compares at a time: four of SQLite's pages as Fossil makes them (4,096 bytes).
CHANGED_CHUNK = 16 << 10


def copy_changed(template: Path, path: Path) -> int:
    """PATH, a regular file holding an older copy of TEMPLATE (a home made ahead, node/spare.py), made
    a byte copy of this version of it by writing only the chunks that differ; the number written. Two
    versions of the runs' clone share most of their pages (pulls only add rows), and the next commit
    to PATH (the preparation's make_own) waits for the disk to take what was written: the whole
    history after copy_bytes (60 to 80 ms for click.fossil with 20,000 posts on our machines), a
    hundred chunks here, for less CPU than the whole copy (docs/node.md, 'A check-in's pull in place').
    PATH is opened without following a link; what it holds is read only to compare, never past
    TEMPLATE's size (D41)."""
    with open(template, "rb") as source, shared(source.fileno(), template):  # no commit meanwhile (module doc)
        target = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
        try:
            if not stat.S_ISREG(os.fstat(target).st_mode):
                raise FossilError(["copy", str(path)], 0, "", "not a regular file")
            os.fchmod(target, 0o600)
            size, done, written = os.fstat(source.fileno()).st_size, 0, 0
            while done < size:
                want = os.pread(source.fileno(), min(CHANGED_CHUNK, size - done), done)
                if not want:
                    raise FossilError(["copy", str(template)], 0, "", "the node's clone ended early")
                if os.pread(target, len(want), done) != want:
                    os.pwrite(target, want, done)
                    written += 1
                done += len(want)
            os.ftruncate(target, size)
        finally:
            os.close(target)
    return written


_NO_COPY_RANGE = (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EPERM)


def _copy_range(source: int, target: int, at: int, count: int) -> int:
    return os.copy_file_range(source, target, count, at, at)


def _send(source: int, target: int, at: int, count: int) -> int:
    os.lseek(target, at, os.SEEK_SET)
    return os.sendfile(target, source, at, count)


def copy_with_checkout(template: Path, directory: Path, clone: str, checkout: str, *, home: Path, login: str) -> None:
    """DIRECTORY/CLONE, a byte copy of TEMPLATE, and DIRECTORY/CHECKOUT, Fossil's checkout of its tip
    naming it `../CLONE`: relative, so the two still find each other moved together (node/spare.py)."""
    copy_bytes(template, directory / clone)
    (directory / checkout).mkdir()
    run_fossil(["open", "--force", "--nosync", f"../{clone}"], home=home, cwd=directory / checkout, user=login)


def make_own(path: Path, base_url: str, login: str, *, home: Path, autosync: str,
             checkout: Path | None = None, password: str | None = None) -> CallerClone:
    """The copy at PATH made LOGIN's own clone (module doc). A checkout may be opened from it
    meanwhile (run_steps/prepare.py): Fossil waits for the other's lock, and what this changes (the
    server-code, the login row, sync settings) is nothing a checkout reads or records. CHECKOUT:
    one opened elsewhere and moved here (node/spare.py), recorded where Fossil records its own.
    PASSWORD: kept for sync as `remember_password` keeps it, in the same Fossil run (Fossil's own
    `obscure()`, which it documents as what it stores for a remote's password); on standard input."""
    script = "\n".join([
        "PRAGMA secure_delete=ON;",  # nothing of the template's rows is left in free pages
        # Not waiting for the disk: this commit's sync took the copy's whole history with it (40 to 70 ms
        # on click.fossil), and a home is never used after its host's crash (emptied, run_steps/prepare.py).
        "PRAGMA synchronous=OFF;",
        # One transaction: a Fossil working on the copy meanwhile (an update, run_steps/prepare.py) finds
        # its user as the copy was (the sync URL's login) or as it is made, never half of each.
        "BEGIN IMMEDIATE;",
        "UPDATE config SET value=lower(hex(randomblob(20))), mtime=now() WHERE name='server-code';",
        "DELETE FROM config WHERE name IN ('last-sync-pw', 'last-sync-url') OR name GLOB 'syncwith:*'"
        " OR name GLOB 'syncfrom:*';",
        # The clone's own first login (its maker's, uid 1 of a fresh clone) becomes the run user's.
        f"UPDATE user SET login={_sql(login)}, pw={_sql(os.urandom(16).hex())}, cap='s', info='',"
        " mtime=strftime('%s','now') WHERE uid=(SELECT min(uid) FROM user WHERE cap GLOB '*s*');",
        "REPLACE INTO config(name, value, mtime) VALUES"
        f" ('autosync', {_sql(autosync)}, now()), ('mtime-changes', 'off', now()),"
        f" ('last-sync-url', {_sql(login_url(base_url, login))}, now());",
        *([] if checkout is None else [  # Fossil's `open` records its checkout in the clone
            "DELETE FROM config WHERE name GLOB 'ckout:*';",
            f"REPLACE INTO config(name, value, mtime) VALUES ({_sql(f'ckout:{checkout}/')}, '1', now());"]),
        *([] if password is None else [
            f"REPLACE INTO config(name, value, mtime) VALUES ('last-sync-pw', obscure({_sql(password)}), now());"]),
        "COMMIT;",
        "SELECT count(*) FROM user WHERE login=" + _sql(login) + ";", ""])
    def shown(text: str) -> str:  # a shell may quote the statement it failed on: never the password
        return text.replace(password, "***") if password else text

    try:
        made = run_fossil(["sql", "-R", str(path)], home=home, input=script, user=login)
    except FossilError as exc:
        raise FossilError(exc.args_run, exc.returncode, shown(exc.stdout), shown(exc.stderr),
                          cause=exc.cause) from None
    if made.stdout.split()[-1:] != ["1"]:
        raise FossilError(["sql", "-R", str(path)], 0, shown(made.stdout),
                          "the copy's own login was not made the run user's")
    return CallerClone(path, login, home)


def lacking(path: Path, served: Path | str, after: int, upto: int) -> int:
    """How many public artifacts SERVED received after receipt AFTER up to UPTO
    the clone at PATH lacks. Fossil 2.21's pull exits 0 when it cannot reach
    the server ("cannot connect to host"): this says whether it pulled."""
    from ocx.fossil.repository import Repository

    with Repository(served) as repository:
        wanted = repository.public_stored(after, upto)
    with Repository(path) as clone:
        return len(wanted) - len(clone.holding(wanted))


def pull_as(clone: CallerClone, base_url: str, password: str) -> None:
    """Pull what CLONE lacks from BASE_URL as its login, remembering nothing."""
    try:
        run_fossil_with_password(["pull", login_url(base_url, clone.login), "-R", str(clone.path)], password,
                                 home=clone.home, remember=False, user=clone.login)
    except FossilError as exc:
        raise FossilError(["pull", base_url], exc.returncode, "", exc.stderr.replace(password, "***"),
                          cause=exc.cause) from None


def remember_password(clone: CallerClone, base_url: str, password: str) -> None:
    """CLONE keeps its login's PASSWORD for sync, obscured, as Fossil keeps it
    when asked at its own prompt (never in argv, D41)."""
    try:
        run_fossil_with_password(["remote", login_url(base_url, clone.login), "-R", str(clone.path)], password,
                                 home=clone.home, remember=True, user=clone.login)
    except FossilError as exc:
        raise FossilError(["remote", base_url], exc.returncode, "", exc.stderr.replace(password, "***"),
                          cause=exc.cause) from None

"""A copy of the served repository with no secret in it, for the smoke of a staged release (D45, D48).

The build user's unit runs the staged release's page against this copy (the smoke's `status` step,
release_build/build.py): code nobody accepted yet reads it, so it holds what a reader of the
repository may see and no more. Made by root before the build, through Fossil where Fossil has a
word for it:

- a consistent copy of the file (SQLite's online backup, read-only on the served file: the server
  may write meanwhile);
- `fossil scrub --verily`: passwords, private branches, concealed e-mail addresses, access and
  admin logs, sync and login-group settings (Fossil 2.21 scrub.c);
- what scrub leaves: each login's session cookie, its expiry and address, the captcha's and any
  other `*secret*` setting, remembered remotes, and the e-mail subscribers' tables (their codes
  unsubscribe them); then a VACUUM with secure_delete, so no freed page keeps a cleared value.

The user table's logins and capabilities stay: `status` reads them (the caller's capabilities).
"""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from .fossil_failure import FossilError
from .program import run_fossil

CLEARED = "\n".join([
    "PRAGMA secure_delete=ON;",
    "UPDATE user SET pw='', cookie=NULL, cexpire=NULL, ipaddr=NULL;",
    "DELETE FROM config WHERE name GLOB '*secret*' OR name GLOB 'last-sync-*' OR name GLOB 'syncwith:*'"
    " OR name GLOB 'syncfrom:*' OR name GLOB 'gitpush:*' OR name GLOB 'login-group-*' OR name GLOB 'peer-*'"
    " OR name GLOB 'email-*' OR name GLOB 'ssl-*';",
    "DROP TABLE IF EXISTS subscriber;",
    "DROP TABLE IF EXISTS pending_alert;",
    "DROP TABLE IF EXISTS chat;",
    "VACUUM;",
    "SELECT count(*) FROM user WHERE pw<>'' OR cookie IS NOT NULL;",
    "",
])


def copy_without_secrets(served: Path | str, path: Path | str, *, home: Path | str) -> None:
    """PATH (new, 0600, the caller's to hand on): SERVED with its user table's and settings' secrets
    cleared (module doc). Raises FossilError when any step fails; PATH is then removed."""
    target = Path(path)
    target.unlink(missing_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    os.close(fd)
    try:
        source = sqlite3.connect(f"file:{quote(str(Path(served).resolve()))}?mode=ro", uri=True, timeout=30)
        try:
            copy = sqlite3.connect(str(target))
            try:
                source.backup(copy)
            finally:
                copy.close()
        finally:
            source.close()
        run_fossil(["scrub", "--verily", "--force", str(target)], home=home, user="root", timeout=600)
        left = run_fossil(["sql", "-R", str(target)], home=home, user="root", input=CLEARED, timeout=600)
        if left.stdout.split()[-1:] != ["0"]:
            raise FossilError(["sql", "-R", str(target)], 0, left.stdout, "a password or cookie was left in the copy")
    except sqlite3.Error as error:
        target.unlink(missing_ok=True)
        raise FossilError(["copy", str(served)], -1, "", str(error)) from None
    except FossilError:
        target.unlink(missing_ok=True)
        raise

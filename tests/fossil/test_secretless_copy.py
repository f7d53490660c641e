"""The copy of the served repository a staged release's smoke reads (fossil/secretless_copy.py, D48):
made from a real served repository whose logins hold passwords and a live session, it keeps every
login and its capabilities and no password, cookie, address or secret setting."""
from __future__ import annotations

import sqlite3
from pathlib import Path

from ocx.fossil.secretless_copy import copy_without_secrets


def test_the_copy_keeps_the_logins_and_no_secret(served, tmp_path: Path) -> None:
    served.web("alice").get("/timeline")  # logged in: a session cookie in the user table
    db = sqlite3.connect(served.path)
    db.execute("REPLACE INTO config(name, value, mtime) VALUES ('captcha-secret', 'do-not-copy', 0), "
               "('last-sync-pw', 'do-not-copy', 0)")
    db.commit()
    before = dict(db.execute("SELECT login, cap FROM user").fetchall())
    assert db.execute("SELECT count(*) FROM user WHERE cookie IS NOT NULL").fetchone()[0] >= 1
    db.close()
    copy = tmp_path / "copy.fossil"
    copy_without_secrets(served.path, copy, home=tmp_path / "home")
    assert copy.stat().st_mode & 0o777 == 0o600
    made = sqlite3.connect(copy)
    assert dict(made.execute("SELECT login, cap FROM user").fetchall()) == before
    assert made.execute("SELECT count(*) FROM user WHERE pw<>'' OR cookie IS NOT NULL OR ipaddr IS NOT NULL"
                        ).fetchone()[0] == 0
    assert made.execute("SELECT count(*) FROM config WHERE name GLOB '*secret*' OR name GLOB 'last-sync-*'"
                        ).fetchone()[0] == 0
    assert b"do-not-copy" not in copy.read_bytes()  # not in a freed page either
    assert made.execute("SELECT count(*) FROM blob").fetchone()[0] > 0
    made.close()

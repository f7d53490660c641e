"""What a caller's clone says of its server and login (fossil/clone_facts.py, D22): a URL that
names a login but no host names no server, and says so instead of failing."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ocx.fossil.clone_facts import SavedLogin, saved_login
from ocx.fossil.program import run_fossil

pytestmark = pytest.mark.fossil


def _clone_saying(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "clone.fossil"
    run_fossil(["new", str(path)], home=tmp_path / "home", user="alice")
    db = sqlite3.connect(path)
    try:
        with db:
            db.execute("REPLACE INTO config(name, value, mtime) VALUES ('last-sync-url', ?, 0)", (url,))
    finally:
        db.close()
    return path


def test_a_url_with_login_and_host_names_both(tmp_path: Path) -> None:
    clone = _clone_saying(tmp_path, "http://alice@127.0.0.1:8080/repo")
    assert saved_login(clone) == SavedLogin("http://127.0.0.1:8080/repo", "alice", None)


def test_a_url_with_a_login_and_no_host_names_no_server(tmp_path: Path) -> None:
    clone = _clone_saying(tmp_path, "http://alice@/repo")
    assert saved_login(clone) is None

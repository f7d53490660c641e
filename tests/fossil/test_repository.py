"""The reader itself: read-only, server-code, hash resolution (D11), users."""
from __future__ import annotations

import sqlite3

import pytest

from ocx.fossil.errors import AmbiguousPrefix, BadPrefix, UnknownArtifact, UnknownUser
from ocx.fossil.repository import Repository

pytestmark = pytest.mark.fossil


def test_codes_match_the_config_table(served) -> None:
    ((server_code,),) = served.sql("SELECT value FROM config WHERE name='server-code'")
    ((project_code,),) = served.sql("SELECT value FROM config WHERE name='project-code'")
    with served.repository() as repo:
        assert repo.server_code == server_code and len(server_code) == 40
        assert repo.project_code == project_code != server_code


def test_a_clone_has_its_own_server_code(served) -> None:
    clone = served.clone("alice")
    with served.repository() as repo, Repository(clone.path) as mine:
        assert mine.project_code == repo.project_code
        assert mine.server_code != repo.server_code


def test_resolve(served) -> None:
    root = served.web("alice").new_thread("resolve", "me")
    with served.repository() as repo:
        assert repo.resolve(root[:10]) == root == repo.resolve(root)
        with pytest.raises(BadPrefix):
            repo.resolve(root[:9])
        with pytest.raises(BadPrefix):  # upper case (a prefix of digits alone, about 1 in 100, has none to raise)
            repo.resolve(root[:10].upper() if set(root[:10]) & set("abcdef") else root[:9] + "A")
        missing = "0123456789" if not root.startswith("0123456789") else "9876543210"
        with pytest.raises(UnknownArtifact) as unknown:
            repo.resolve(missing)
        assert unknown.value.prefix == missing
        # 17 artifacts or more: two surely share their first digit.
        while len(hashes := [h for (h,) in served.sql("SELECT uuid FROM blob WHERE size>=0")]) < 17:
            served.web("alice").new_thread("filler", str(len(hashes)))
        shared = next(h[0] for h in hashes if sum(x[0] == h[0] for x in hashes) > 1)
        with pytest.raises(AmbiguousPrefix) as ambiguous:
            repo.resolve(shared, min_digits=1)
        assert len(ambiguous.value.matches) == 2


def test_artifact_bytes_are_checked_against_their_hash(served) -> None:
    root = served.web("bob").new_thread("bytes", "checked")
    with served.repository() as repo:
        data = repo.artifact(root)
        assert data == served.web("bob").raw(root)
        assert repo.event_type(root) == "f"
        with pytest.raises(UnknownArtifact):
            repo.artifact("f" * 64)


def test_reader_cannot_write(served) -> None:
    with served.repository() as repo:
        with pytest.raises(sqlite3.OperationalError):
            repo._db.execute("UPDATE user SET cap='s' WHERE login='alice'")
    assert served.sql("SELECT cap FROM user WHERE login='alice'") == [("i4",)]


def test_users(served) -> None:
    with served.repository() as repo:
        assert repo.user("carol").capabilities == "3"
        assert repo.user("carol").contact == "carol@example.org"
        assert {"admin", "alice", "nobody", "anonymous"} <= {u.login for u in repo.users()}
        with pytest.raises(UnknownUser):
            repo.user("zed")
        with pytest.raises(UnknownUser):
            repo.effective_capabilities("zed")
        assert repo.holds_admin("zed") is False and repo.holds_admin(None) is False


def test_missing_file_is_refused(tmp_path) -> None:
    with pytest.raises(FileNotFoundError):
        Repository(tmp_path / "none.fossil")
    assert not (tmp_path / "none.fossil").exists()  # read-only open made nothing

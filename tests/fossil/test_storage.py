"""blob.content decoded in Python equals what `fossil artifact` prints, for
every artifact of a repository where deltas exist (storage.py, delta.py)."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ocx.fossil import admin
from ocx.fossil.manifest import is_artifact, parse
from ocx.fossil.program import run_fossil
from ocx.fossil.repository import Repository

pytestmark = pytest.mark.fossil


@pytest.fixture(scope="module")
def many_versions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("versions")
    home, checkout, path = base / "home", base / "checkout", base / "versions.fossil"
    admin.new_repository(path, "admin", home=home)
    checkout.mkdir()
    run_fossil(["open", str(path)], home=home, cwd=checkout, user="admin")
    run_fossil(["settings", "autosync", "off"], home=home, cwd=checkout, user="admin")
    # Edits faster than a second: make Fossil hash files, not trust mtimes.
    run_fossil(["settings", "mtime-changes", "off"], home=home, cwd=checkout, user="admin")
    lines = [f"line {i}: {'x' * (i % 17)}" for i in range(400)]
    for version in range(25):
        lines[(version * 37) % 400] = f"changed in version {version}"
        lines.insert(version * 11, f"inserted {version}")
        (checkout / "big.txt").write_text("\n".join(lines) + "\n")
        (checkout / "small.txt").write_text(f"version {version}\n")
        if version == 0:
            run_fossil(["add", "big.txt", "small.txt"], home=home, cwd=checkout, user="admin")
        run_fossil(["commit", "-m", f"version {version}", "--no-warnings"], home=home, cwd=checkout, user="admin")
    return path


def test_every_artifact_decodes_as_fossil_prints_it(many_versions: Path, tmp_path: Path) -> None:
    db = sqlite3.connect(f"file:{many_versions}?mode=ro", uri=True)
    deltas = db.execute("SELECT count(*) FROM delta").fetchone()[0]
    # Chains, not only single deltas: a delta whose source is a delta too.
    chained = db.execute("SELECT count(*) FROM delta d JOIN delta s ON s.rid=d.srcid").fetchone()[0]
    hashes = [row[0] for row in db.execute("SELECT uuid FROM blob WHERE size>=0 ORDER BY rid")]
    db.close()
    assert deltas > 20 and chained > 0
    assert len(hashes) > 50
    with Repository(many_versions) as repo:
        for hash_ in hashes:
            printed = run_fossil(["artifact", hash_, "-R", str(many_versions)], home=tmp_path)
            # run_fossil decodes text; the files here are ASCII, so compare bytes.
            assert repo.artifact(hash_) == printed.stdout.encode(), hash_


def test_checkins_parse_and_files_do_not(many_versions: Path) -> None:
    with Repository(many_versions) as repo:
        rows = repo._rows("SELECT b.uuid, e.type FROM blob b LEFT JOIN event e ON e.objid=b.rid")
        for hash_, kind in rows:
            data = repo.artifact(hash_)
            assert is_artifact(data) == (kind == "ci"), hash_
            if kind == "ci":
                card = parse(data)
                assert card.user == "admin" and card.comment.startswith(("version", "initial"))

"""The node's clone for runs and each run's copy of it (fossil/copies.py): a
copy is the run's own clone, as a clone over HTTP as the run user would be
(D16, C5, C6), and holds no secret of the node's."""
from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ocx.fossil.copies import (
    CHANGED_CHUNK,
    copy_bytes,
    copy_changed,
    copy_for_run,
    make_own,
    make_template,
    refresh_template,
)
from ocx.fossil.fossil_failure import FossilError
from ocx.fossil.program import run_fossil
from ocx.fossil.repository import Repository

pytestmark = pytest.mark.fossil


def config_of(path, name):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = db.execute("SELECT value FROM config WHERE name=?", (name,)).fetchone()
        return row[0] if row else None
    finally:
        db.close()


@pytest.fixture(scope="module")
def template(served, tmp_path_factory):
    # bob plays the node user here: he may clone (g from nobody) and push (i).
    path = tmp_path_factory.mktemp("template") / "runs.fossil"
    make_template(path, served.base_url, "bob", served.passwords["bob"], home=served.work / "home-template")
    return path


def test_a_copy_is_the_run_users_clone_and_holds_nothing_of_the_nodes(served, template, tmp_path) -> None:
    checkin = served.commit("alice", "for-the-copy.txt", "copied\n")
    refresh_template(template, served.base_url, "bob", served.passwords["bob"], home=served.work / "home-template")
    clone = copy_for_run(template, tmp_path / "repo.fossil", served.base_url, "alice", served.passwords["alice"],
                         home=tmp_path, autosync="on")
    with Repository(template) as kept, Repository(clone.path) as copy, served.repository() as server:
        assert copy.project_code == server.project_code
        assert len({copy.server_code, kept.server_code, server.server_code}) == 3  # C1: its own
        assert [u.login for u in copy.users() if "s" in u.capabilities] == ["alice"]
        assert "bob" not in {u.login for u in copy.users()}
        assert copy.checkin(checkin).hash == checkin  # what was pulled, there
    assert config_of(template, "last-sync-pw") is None  # the node's clone remembers no password
    assert config_of(clone.path, "last-sync-url").rstrip("/") == served.base_url.replace("//", "//alice@")
    assert config_of(clone.path, "last-sync-pw")  # the run's own, kept by Fossil's prompt
    data = clone.path.read_bytes()
    assert served.passwords["bob"].encode() not in data and served.passwords["alice"].encode() not in data
    # It works as the run's clone: a check-in made in it reaches the server from alice.
    checkout = clone.open_checkout(tmp_path / "checkout", checkin, settings=False)
    (checkout / "by-the-run.txt").write_text("mine\n")
    mine = clone.commit(checkout, "from a copy")
    with served.repository() as server:
        assert server.sender(mine).login == "alice" and server.checkin(mine).user == "alice"
        assert server.checkin(mine).parents == (checkin,)


def test_a_no_password_copy_keeps_none_and_cannot_push(served, template, tmp_path) -> None:
    clone = copy_for_run(template, tmp_path / "repo.fossil", served.base_url, "alice", None, home=tmp_path,
                         autosync="off")
    assert config_of(clone.path, "last-sync-pw") is None and config_of(clone.path, "autosync") == "off"
    checkout = clone.open_checkout(tmp_path / "checkout", settings=False)
    (checkout / "no-password.txt").write_text("x\n")
    clone.commit(checkout, "held back", push=False)
    with pytest.raises(FossilError):
        clone.push()  # C6: it writes only through the node's tools


def test_a_copy_taken_while_the_template_is_pulled_is_whole(served, template, tmp_path) -> None:
    for n in range(3):
        served.commit("alice", f"during-{n}.txt", f"{n}\n")
    pulling = threading.Thread(target=refresh_template, args=(template, served.base_url, "bob",
                                                              served.passwords["bob"]),
                               kwargs={"home": served.work / "home-template"})
    pulling.start()
    copies = []
    while pulling.is_alive() or not copies:
        copies.append(copy_for_run(template, tmp_path / f"c{len(copies)}.fossil", served.base_url, "alice", None,
                                   home=tmp_path, autosync="off"))
    pulling.join()
    for clone in copies:  # each is one version of the template, never half of one
        db = sqlite3.connect(f"file:{clone.path}?mode=ro", uri=True)
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        db.close()


def test_a_password_kept_in_the_same_run_as_the_rest_works_as_fossils_prompt_keeps_it(served, template,
                                                                                     tmp_path) -> None:
    """make_own's PASSWORD (run_steps/prepare.py: the run user made meanwhile): obscured as Fossil keeps a
    remote's, never in clear in the file, and a check-in made in the clone reaches the server as alice."""
    copy_bytes(template, tmp_path / "repo.fossil")
    password = served.passwords["alice"]
    clone = make_own(tmp_path / "repo.fossil", served.base_url, "alice", home=tmp_path, autosync="on",
                     password=password)
    kept = config_of(clone.path, "last-sync-pw")
    assert kept and password not in kept and password.encode() not in clone.path.read_bytes()
    checkout = clone.open_checkout(tmp_path / "checkout", settings=False)
    (checkout / "kept-in-one-run.txt").write_text("mine\n")
    mine = clone.commit(checkout, "from a copy whose password make_own kept")
    with served.repository() as server:
        assert server.sender(mine).login == "alice"


def test_a_failure_of_make_own_never_shows_the_password(template, tmp_path) -> None:
    """Fossil refusing the file, and the script failing within a repository (no user table)."""
    (tmp_path / "not.fossil").write_bytes(b"not a repository at all")
    copy_bytes(template, tmp_path / "broken.fossil")
    run_fossil(["sql", "-R", str(tmp_path / "broken.fossil")], home=tmp_path, input="DROP TABLE user;\n")
    secret = "s3cr3t-" + "9" * 20
    for name in ("not.fossil", "broken.fossil"):
        with pytest.raises(FossilError) as raised:
            make_own(tmp_path / name, "http://127.0.0.1:9", "alice", home=tmp_path, autosync="on", password=secret)
        assert secret not in str(raised.value) and secret not in raised.value.stdout + raised.value.stderr


@pytest.mark.parametrize("source_on", ["same filesystem", "/dev/shm"])
def test_a_byte_copy_is_the_template_exactly_and_nobody_elses(tmp_path, source_on) -> None:
    """copy_file_range where the kernel takes it; across filesystems it may refuse (EXDEV) and
    sendfile copies instead. Either way, every byte, and 0600 from its first byte."""
    import os
    import tempfile

    data = os.urandom(3 * 2**20 + 12345)  # over one call's chunk, and not a multiple of a page
    where = tmp_path if source_on == "same filesystem" else Path(tempfile.mkdtemp(dir="/dev/shm"))
    try:
        (where / "template.fossil").write_bytes(data)
        copy_bytes(where / "template.fossil", tmp_path / "copy.fossil")
        assert (tmp_path / "copy.fossil").read_bytes() == data
        assert (tmp_path / "copy.fossil").stat().st_mode & 0o777 == 0o600
    finally:
        if where != tmp_path:
            import shutil

            shutil.rmtree(where)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(source=st.binary(max_size=5 * CHANGED_CHUNK), target=st.binary(max_size=5 * CHANGED_CHUNK),
       keep=st.booleans())
def test_copy_changed_makes_the_target_the_source_writing_only_the_chunks_that_differ(tmp_path, source, target,
                                                                                       keep) -> None:
    """copy_changed (a home made ahead given the newer runs' clone): whatever the target held, longer or
    shorter, it ends a byte copy of the source, 0600, and says how many chunks it wrote."""
    if keep:  # a target sharing most of the source, as two versions of the runs' clone do
        target = source[: len(source) // 2] + target
    origin, copy = tmp_path / "origin.fossil", tmp_path / "copy.fossil"
    origin.write_bytes(source)
    copy.write_bytes(target)
    differing = sum(1 for at in range(0, len(source), CHANGED_CHUNK)
                    if target[at:at + CHANGED_CHUNK][:len(source[at:at + CHANGED_CHUNK])]
                    != source[at:at + CHANGED_CHUNK])
    assert copy_changed(origin, copy) == differing
    assert copy.read_bytes() == source and (copy.stat().st_mode & 0o777) == 0o600


def test_copy_changed_never_follows_a_link_nor_writes_what_is_not_a_file(template, tmp_path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"root's own")
    (tmp_path / "link.fossil").symlink_to(victim)
    with pytest.raises(OSError):
        copy_changed(template, tmp_path / "link.fossil")
    os.mkfifo(tmp_path / "fifo.fossil")
    with pytest.raises(FossilError):
        copy_changed(template, tmp_path / "fifo.fossil")
    assert victim.read_bytes() == b"root's own"


def test_copy_changed_over_an_older_version_writes_few_chunks_and_the_result_is_the_template(
        served, template, tmp_path) -> None:
    older = tmp_path / "older.fossil"
    copy_bytes(template, older)
    for n in range(3):
        served.commit("alice", f"after-the-older-{n}.txt", f"{n}\n")
    refresh_template(template, served.base_url, "bob", served.passwords["bob"], home=served.work / "home-template")
    written = copy_changed(template, older)
    assert 0 < written < template.stat().st_size // CHANGED_CHUNK
    assert older.read_bytes() == template.read_bytes()

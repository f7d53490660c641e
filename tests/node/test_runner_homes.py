"""A runner's homes: each run works in its own copy; what it changed is written back (runner_homes.py)."""
import os
import time

from ocx.node.unit.runner_homes import copy_back, copy_in, copy_path, map_file


def make(tmp_path):
    home = tmp_path / "homes" / "claude"
    (home / "projects").mkdir(parents=True)
    (home / "settings.json").write_text("{}\n")
    (home / "projects" / "old.jsonl").write_text("old\n")
    run, marks = tmp_path / "run", tmp_path / "marks"
    run.mkdir()
    marks.mkdir()
    return home, run, marks


def test_a_run_gets_a_copy_and_only_what_it_changed_goes_back(tmp_path):
    home, run, marks = make(tmp_path)
    before = time.time() + 0.01
    copy_in([str(home)], run, marks, "ocx-a-b", before)
    copy = copy_path(run, 0)
    assert (copy / "settings.json").read_text() == "{}\n" and map_file(marks, "ocx-a-b").exists()
    time.sleep(0.02)
    signin = copy / ".credentials.json"
    signin.write_text("token-2\n")
    os.chmod(signin, 0o600)
    (copy / "projects" / "new").mkdir()
    (copy / "projects" / "new" / "s.jsonl").write_text("session\n")
    os.remove(home / "settings.json")  # the host's own change meanwhile: an unchanged copy does not undo it
    assert copy_back(marks, "ocx-a-b") == 2
    assert (home / ".credentials.json").read_text() == "token-2\n"
    assert oct(os.stat(home / ".credentials.json").st_mode & 0o777) == "0o600"
    assert (home / "projects" / "new" / "s.jsonl").read_text() == "session\n"
    assert not (home / "settings.json").exists()
    assert not map_file(marks, "ocx-a-b").exists() and copy_back(marks, "ocx-a-b") == 0  # once


def test_links_made_by_a_run_are_never_followed(tmp_path):
    home, run, marks = make(tmp_path)
    secret = tmp_path / "secret"
    secret.write_text("root's\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    copy_in([str(home)], run, marks, "ocx-a-b", time.time() + 0.01)
    time.sleep(0.02)
    copy = copy_path(run, 0)
    (copy / "leak").symlink_to(secret)  # would make root copy a file the run cannot read
    (copy / "via").symlink_to(outside, target_is_directory=True)
    (home / "projects" / "redirect").symlink_to(outside, target_is_directory=True)
    (copy / "projects" / "redirect").mkdir()
    (copy / "projects" / "redirect" / "x").write_text("x\n")  # would write through the host's link
    (copy / "kept.txt").write_text("kept\n")
    assert copy_back(marks, "ocx-a-b") == 1  # kept.txt alone
    assert (home / "kept.txt").read_text() == "kept\n"
    assert not (home / "leak").exists() and not (home / "via").exists()
    assert list(outside.iterdir()) == []


def test_a_home_that_does_not_exist_yet_is_made_from_the_runs_copy(tmp_path):
    _, run, marks = make(tmp_path)
    home = tmp_path / "homes" / "codex"
    copy_in([str(home)], run, marks, "ocx-c-d", time.time() + 0.01)
    time.sleep(0.02)
    (copy_path(run, 0) / "auth.json").write_text("{}\n")
    assert copy_back(marks, "ocx-c-d") == 1 and (home / "auth.json").read_text() == "{}\n"

"""The bounded readers root's code uses on whatever a run can write (D41):
each of the shapes a hostile run can leave, on a real filesystem."""
from __future__ import annotations

import os
import resource
import threading

import pytest
from hypothesis import given, strategies as st

from ocx.node import bounded


def deep_tree(root, depth: int, name: str = "d"):
    """A chain of DEPTH directories below ROOT, made with its own descriptors
    (a path that long is beyond PATH_MAX), a file at the bottom."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir(name, dir_fd=fd)
        below = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = below
    with open(os.open("bottom", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd), "w") as out:
        out.write("deep")
    os.close(fd)


def test_a_regular_file_is_read_up_to_its_limit(tmp_path):
    (tmp_path / "f").write_bytes(b"x" * 100)
    assert bounded.read_bounded(tmp_path / "f", 100) == b"x" * 100
    with pytest.raises(bounded.Refused):
        bounded.read_bounded(tmp_path / "f", 99)
    assert bounded.read_bounded(tmp_path / "f", 10, tail=True) == b"x" * 10


def test_a_link_is_never_followed_at_the_end_or_on_the_way(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("admin password")
    home = tmp_path / "home"
    home.mkdir()
    (home / "last").symlink_to(secret)
    (home / "sub").symlink_to(tmp_path)
    with pytest.raises(OSError):
        bounded.read_bounded(home / "last", 1000)
    with pytest.raises(OSError):
        bounded.open_directory(home, "sub")
    assert bounded.read_last_line(home / "last") == ""


def test_a_fifo_is_refused_at_once_and_never_waited_on(tmp_path):
    os.mkfifo(tmp_path / "last")
    done = threading.Event()
    outcome = []

    def read():
        outcome.append(bounded.read_last_line(tmp_path / "last"))
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(5), "reading a FIFO blocked"
    assert outcome == [""]


def test_a_hard_link_is_refused(tmp_path):
    (tmp_path / "secret").write_text("root's")
    os.link(tmp_path / "secret", tmp_path / "last")
    with pytest.raises(bounded.Refused):
        bounded.read_bounded(tmp_path / "last", 1000)


def test_names_that_climb_out_are_refused(tmp_path):
    for relative in ("../x", "a/../../x", "/etc/passwd", "a//b", "."):
        with pytest.raises(bounded.Refused):
            bounded.parts(relative)


def test_the_last_line_of_a_huge_multi_line_file_is_one_clean_line(tmp_path):
    (tmp_path / "last").write_bytes(b"line\n" * 2_000_000 + b"FAILED: \x1b[31mred\x07\r\n\n  ")
    assert bounded.read_last_line(tmp_path / "last") == "FAILED: [31mred"


@given(st.text(max_size=300))
def test_one_line_is_always_one_line_without_control_characters(text):
    line = bounded.one_line(text.encode("utf-8", errors="surrogatepass"), limit=200)
    assert len(line) <= 200
    assert line.splitlines() in ([], [line])
    assert not any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 for c in line)


def test_a_1200_deep_tree_is_walked_and_removed_without_recursion_or_running_out_of_descriptors(tmp_path):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))  # fewer descriptors than the tree is deep
    try:
        (tmp_path / "home").mkdir()
        deep_tree(tmp_path / "home", 1200)
        (tmp_path / "home" / "top.txt").write_text("top")
        (tmp_path / "home" / "link").symlink_to("/etc")
        with bounded.directory(tmp_path / "home") as top:
            found = [entry.relative for entry in bounded.walk(top, max_depth=16)]
        assert found == [("top.txt",)]  # what lies deeper is left unread; the link is not a file
        bounded.remove_tree(tmp_path / "home")
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert not (tmp_path / "home").exists()
    assert os.path.isdir("/etc")


def test_removal_never_goes_through_a_link(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("not the run's")
    home = tmp_path / "home"
    (home / "a").mkdir(parents=True)
    (home / "a" / "out").symlink_to(outside)
    (home / "b").symlink_to(outside / "keep")
    bounded.remove_tree(home)
    assert not home.exists() and (outside / "keep").read_text() == "not the run's"


def test_a_private_copy_is_made_only_of_a_plain_file(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (tmp_path / "clone").write_bytes(b"sqlite")
    with bounded.private_copy(tmp_path / "clone", 100, scratch) as copy:
        assert copy.read_bytes() == b"sqlite" and copy.parent == scratch
    assert not list(scratch.iterdir())
    (tmp_path / "other").symlink_to(tmp_path / "clone")
    with pytest.raises(OSError), bounded.private_copy(tmp_path / "other", 100, scratch):
        pass
    with pytest.raises(bounded.Refused), bounded.private_copy(tmp_path / "clone", 3, scratch):
        pass

"""Moving a checkout made ahead to a check-in (CallerClone.update_checkout; docs/node.md,
'Runs' homes made ahead'): Fossil's `update` either makes the check-in exactly or is refused, so the
run's preparation makes its home afresh. A check-in's link, where links are not allowed, is the case
Fossil gets wrong (D16, D41)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from ocx.fossil.fossil_failure import FossilError
from ocx.fossil.sync import CallerClone, pristine_update

pytestmark = pytest.mark.fossil
SUMMARY = "-" * 79 + "\nupdated-from: a\nupdated-to: b\nchanges: 1 files modified.\n"


def fossil(where: Path, *args: str) -> str:
    done = subprocess.run(["fossil", *args], cwd=where, capture_output=True, text=True, timeout=60,
                          env={"HOME": str(where.parent), "PATH": "/usr/bin:/bin", "USER": "admin"})
    assert done.returncode == 0, done.stderr
    return done.stdout


def checked_in(work: Path, message: str) -> str:
    fossil(work, "addremove")
    out = fossil(work, "commit", "-m", message, "--no-warnings")
    return next(line.split()[1] for line in out.splitlines() if line.startswith("New_Version:"))


def history(tmp_path: Path, *, link: bool) -> tuple[Path, str, str]:
    """A repository whose first check-in holds `x` (a link to /etc when LINK, else a file) and whose
    second makes `x` a directory holding `evil`; and a clone of it where links are not allowed."""
    origin, work = tmp_path / "origin.fossil", tmp_path / "work"
    fossil(tmp_path, "init", str(origin), "-A", "admin")
    work.mkdir()
    fossil(work, "open", str(origin))
    if link:
        fossil(work, "settings", "allow-symlinks", "on")
        os.symlink("/etc", work / "x")
    else:
        (work / "x").write_text("/etc")
    first = checked_in(work, "x")
    (work / "x").unlink()
    (work / "x").mkdir()
    (work / "x" / "evil").write_text("planted\n")
    second = checked_in(work, "x/evil")
    clone = tmp_path / "clone.fossil"
    fossil(tmp_path, "clone", str(origin), str(clone))
    # A clone of a file copies its settings; one over HTTP, as the node's for runs, gets none.
    fossil(tmp_path, "unset", "allow-symlinks", "-R", str(clone))
    assert fossil(tmp_path, "settings", "allow-symlinks", "-R", str(clone)).split()[1:] == []
    return clone, first, second


@pytest.mark.parametrize("link", [False, True])
def test_an_update_makes_the_checkin_exactly_or_is_refused(tmp_path, link) -> None:
    clone, first, second = history(tmp_path, link=link)
    own = CallerClone(clone, "admin", tmp_path)
    checkout = own.open_checkout(tmp_path / "checkout", first, settings=False)
    assert not (checkout / "x").is_symlink()  # root's checkout never makes a check-in's link
    if link:  # Fossil keeps the link's text as an edit and cannot write x/evil beneath it
        with pytest.raises(FossilError, match="not the check-in's exactly"):
            own.update_checkout(checkout, second)
    else:
        own.update_checkout(checkout, second)
        assert (checkout / "x" / "evil").read_text() == "planted\n"
        assert fossil(checkout, "changes").strip() == ""
    assert not Path("/etc/evil").exists()


PLAIN = st.lists(st.tuples(st.sampled_from(["ADD", "UPDATE", "REMOVE"]),
                           st.from_regex(r"[a-z][a-z0-9/._]{0,20}", fullmatch=True)), max_size=8)


@given(PLAIN)
def test_files_only_added_updated_or_removed_are_a_pristine_update(lines) -> None:
    stdout = "".join(f"{verb} {path}\n" for verb, path in lines) + SUMMARY
    assert pristine_update(stdout, "")


@given(PLAIN, st.sampled_from(["CONFLICT x - edited locally but deleted by update", "MERGE x",
                               "ADD x - overwrites an unmanaged file", "EDITED x", "WARNING: 1 merge conflicts"]),
       st.integers(min_value=0, max_value=8))
def test_anything_kept_merged_or_overwritten_is_not(lines, odd, where) -> None:
    shown = [f"{verb} {path}" for verb, path in lines]
    shown.insert(min(where, len(shown)), odd)
    assert not pristine_update("\n".join(shown) + "\n" + SUMMARY, "")


def test_a_complaint_on_its_error_stream_is_not() -> None:
    assert not pristine_update("ADD x/evil\n" + SUMMARY, "cannot write to x/evil because non-directory object x is in the way\n")

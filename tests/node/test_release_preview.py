"""The preview's root side (node/releases/preview.py, D46, D48): root's copy of the staged release
the preview runs, made only when its digest is the staged one, and the ext program for /ext/ocx-next,
run here against a root of the test's: 404 saying nothing is staged, the copy's own python on its
own preview page when `next` names a release, and nothing run for a `next` that names no release."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from ocx.node.releases.links import STAGED, ReleaseError, Releases, release_id
from ocx.node.releases.preview import PREVIEWS, copy_for_preview, preview_program
from ocx.node.releases.tree import tree_digest

CONFIG = "/etc/ocx/n1.json"


def stage(root: Path, version: str) -> str:
    """A release as the build leaves it, whose python says how it was run."""
    building = root / STAGED / f"building-{version}"
    (building / "bin").mkdir(parents=True)
    (building / "bin" / "python").write_text(f'#!/bin/sh\necho "python of {version}:" "$@"\n')
    (building / "bin" / "python").chmod(0o755)
    page = building / "lib" / "python3.11" / "site-packages" / "ocx" / "page"
    page.mkdir(parents=True)
    (page / "preview.py").write_text(f"# {version}\n")
    digest = tree_digest(str(building))
    checkin = hashlib.sha256(version.encode()).hexdigest()
    release = release_id(checkin, digest)
    building.rename(root / STAGED / release)
    (root / STAGED / f"{release}.json").write_text(json.dumps({"checkin": checkin, "digest": digest,
                                                                "smoke": {"version": "passed"}}))
    return release


def program(tmp_path: Path, root: Path) -> Path:
    path = tmp_path / "ocx-next"
    path.write_text(preview_program(CONFIG, str(root)))
    path.chmod(0o755)
    return path


def run(path: Path) -> str:
    done = subprocess.run([str(path)], capture_output=True, timeout=60, cwd="/", env={})  # bytes: CRLF kept
    assert done.returncode == 0, done
    return done.stdout.decode()


def test_with_nothing_staged_the_preview_answers_404_saying_so(tmp_path):
    root = tmp_path / "releases"
    root.mkdir()
    said = run(program(tmp_path, root))
    assert said.startswith("Status: 404 Not Found\r\n") and "Nothing is staged on this node" in said, said


def test_the_preview_runs_roots_copy_of_next_on_its_own_preview_page(tmp_path):
    root = tmp_path / "releases"
    releases = Releases(str(root))
    first = stage(root, "1")
    home = copy_for_preview(str(root), releases.staged(first))
    releases.offer(first)
    assert home == str(root / PREVIEWS / first) and tree_digest(home) == releases.staged(first).digest
    assert os.stat(root / PREVIEWS).st_mode & 0o777 == 0o755
    assert run(program(tmp_path, root)) == f"python of 1: -I -B -m ocx.page.preview {CONFIG}\n"
    # staged/ changed after the copy (the build user's to write): the preview still runs root's copy
    (root / STAGED / first / "bin" / "python").write_text('#!/bin/sh\necho "changed in staged/"\n')
    assert run(program(tmp_path, root)) == f"python of 1: -I -B -m ocx.page.preview {CONFIG}\n"
    # the next stage's copy replaces the earlier one
    second = stage(root, "2")
    copy_for_preview(str(root), releases.staged(second))
    releases.offer(second)
    assert os.listdir(root / PREVIEWS) == [second]
    assert run(program(tmp_path, root)).startswith("python of 2:")


def test_a_release_changed_before_roots_copy_is_not_copied(tmp_path):
    root = tmp_path / "releases"
    release = stage(root, "1")
    (root / STAGED / release / "bin" / "python").write_text("#!/bin/sh\necho changed\n")
    with pytest.raises(ReleaseError, match=f"digest: {release}'s files are not those the build recorded"):
        copy_for_preview(str(root), Releases(str(root)).staged(release))
    assert os.listdir(root / PREVIEWS) == []


@pytest.mark.parametrize("target", ["staged/../../bin", "staged/not-a-release", "staged/0123456789abcdef-x"])
def test_a_next_that_names_no_release_runs_nothing(tmp_path, target):
    root = tmp_path / "releases"
    root.mkdir()
    (root / "next").symlink_to(target)
    said = run(program(tmp_path, root))
    assert said.startswith("Status: 404 Not Found\r\n") and "Nothing is staged" in said, said


def test_a_staged_release_with_no_copy_is_not_previewed(tmp_path):
    root = tmp_path / "releases"
    releases = Releases(str(root))
    release = stage(root, "1")
    releases.offer(release)  # staged by an OCX that made no copy
    said = run(program(tmp_path, root))
    assert said.startswith("Status: 404 Not Found\r\n") and f"{release} has no preview here" in said, said


def test_the_program_names_only_plain_paths():
    with pytest.raises(ValueError, match="preview: "):
        preview_program("/etc/ocx/n1.json'; rm -rf /'")

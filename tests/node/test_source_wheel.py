"""A wheel of OCX's own source tree for a node's first release (D45): its files and metadata, no
link followed and no bytecode taken, and the same tree giving the same bytes (the release's name
is the wheel's sha256)."""
from __future__ import annotations

import hashlib
import os
import shutil
import zipfile
from pathlib import Path

from ocx.node.releases.source_wheel import source_wheel

ROOT = Path(__file__).resolve().parents[2]


def tree(at: Path) -> Path:
    """A small source tree: pyproject.toml and a package of two modules."""
    (at / "ocx" / "sub").mkdir(parents=True)
    shutil.copy(ROOT / "pyproject.toml", at / "pyproject.toml")
    (at / "ocx" / "__init__.py").write_text("")
    (at / "ocx" / "sub" / "mod.py").write_text("X = 1\n")
    return at


def test_the_working_trees_wheel_holds_its_modules_and_metadata(tmp_path):
    wheel = source_wheel(ROOT, tmp_path)
    assert wheel.name == "ocx-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as opened:
        names = set(opened.namelist())
        metadata = opened.read("ocx-0.1.0.dist-info/METADATA").decode()
        record = opened.read("ocx-0.1.0.dist-info/RECORD").decode()
    assert {"ocx/__init__.py", "ocx/cli/launch.py", "ocx/page/console/console.js"} <= names
    assert not any(name.endswith(".pyc") or "__pycache__" in name for name in names)
    assert "Requires-Dist: pydantic" in metadata and 'Requires-Dist: pystemd>=0.13; extra == "node"' in metadata
    assert {line.split(",")[0] for line in record.splitlines()} == names


def test_no_link_is_followed_nor_bytecode_taken(tmp_path):
    src = tree(tmp_path / "src")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("SECRET = 1\n")
    os.symlink(outside, src / "ocx" / "linked")
    os.symlink(outside / "secret.py", src / "ocx" / "secret.py")
    (src / "ocx" / "__pycache__").mkdir()
    (src / "ocx" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (src / "ocx" / "stale.pyc").write_bytes(b"\0")
    (tmp_path / "out").mkdir()
    with zipfile.ZipFile(source_wheel(src, tmp_path / "out")) as opened:
        taken = [name for name in opened.namelist() if not name.startswith("ocx-0.1.0.dist-info/")]
    assert sorted(taken) == ["ocx/__init__.py", "ocx/sub/mod.py"]


def test_the_same_tree_gives_the_same_bytes_and_a_change_other_bytes(tmp_path):
    src = tree(tmp_path / "src")

    def digest(out: str) -> str:
        (tmp_path / out).mkdir()
        return hashlib.sha256(source_wheel(src, tmp_path / out).read_bytes()).hexdigest()

    first = digest("a")
    os.utime(src / "ocx" / "sub" / "mod.py", (0, 0))  # a file's time is not in the wheel
    assert digest("b") == first
    (src / "ocx" / "sub" / "mod.py").write_text("X = 2\n")
    assert digest("c") != first

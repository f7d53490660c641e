"""The linter, as CI runs it: `ruff check ocx` with pyproject.toml's settings.

Every file is held to the same rules: pyproject.toml forgives no file
(no [tool.ruff.lint.per-file-ignores]), and the second test keeps it so.
"""
from __future__ import annotations

import subprocess
import sys
import tomllib

from .scan import ROOT


def ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *args, "ocx"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_ocx_passes_the_linter():
    done = ruff()
    assert done.returncode == 0, f"ruff (configured in pyproject.toml) found:\n{done.stdout}{done.stderr}"


def test_no_file_is_forgiven():
    lint = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    assert not lint.get("per-file-ignores"), "the linter holds every file to the same rules"

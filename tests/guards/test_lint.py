"""The linter, as CI runs it: `ruff check ocx` with pyproject.toml's settings.

Its debts are pyproject.toml's [tool.ruff.lint.per-file-ignores], each a file
and the rules it still breaks; the second test keeps that list honest: a file
that is gone, or a rule the file no longer breaks, is struck from it.
"""
from __future__ import annotations

import json
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


def test_each_debt_the_linter_forgives_is_still_owed():
    debts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]["per-file-ignores"]
    done = ruff("--config", "lint.per-file-ignores = {}", "--output-format", "json")
    assert done.returncode in (0, 1), done.stderr
    owed = {(str((ROOT / finding["filename"]).resolve().relative_to(ROOT)), finding["code"])
            for finding in json.loads(done.stdout)}
    forgiven = {(path, code) for path, codes in debts.items() for code in codes}
    assert sorted(forgiven - owed) == [], "strike these from [tool.ruff.lint.per-file-ignores]: paid, or gone"

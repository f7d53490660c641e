"""The type checker, as CI runs it: mypy over ocx/ with pyproject.toml's settings.

Every package of ocx is held to mypy's strict level, with no module or line waived
(pystemd's missing types are the one override). mypy's cache lives outside the tree, in
the tests' cache on this host, so a run after a small change rechecks only
what changed (about 0.5 s warm, 11 s cold on these machines).
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from . import scan
from .scan import ROOT


def cache_dir() -> Path:
    # One cache per checkout: two trees of ocx checked at once (worktrees, a CI
    # clone beside a developer's) writing one cache crash mypy (INTERNAL ERROR).
    tree = hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]
    for base in (Path("/var/cache/ocx-tests/mypy"), Path(tempfile.gettempdir()) / f"ocx-mypy-{os.getuid()}"):
        place = base / tree
        try:
            place.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(place, os.W_OK):
            return place
    raise RuntimeError("no writable place for mypy's cache")


def test_ocx_passes_the_type_checker():
    done = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache_dir())],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"mypy (configured in pyproject.toml) found:\n{done.stdout}{done.stderr}"
    assert "no issues found" in done.stdout and " source files" in done.stdout, done.stdout


def test_the_checker_holds_every_package_to_the_strict_level(tmp_path):
    # One module in each package of ocx, checked with the project's settings
    # (in a cache of its own: its names are ocx's).
    packages = [f"ocx/{name}" for name in sorted(scan.SHARED | scan.PROCESSES) if (ROOT / "ocx" / name).is_dir()]
    (tmp_path / "ocx").mkdir()
    (tmp_path / "ocx" / "__init__.py").write_text("")
    probe = ("def twice(x):\n    return x * 2\n\n\n"
             "def label(x: int) -> str:\n    return twice(x)\n\n\n"
             "def wrong(x: int) -> str:\n    return x\n")
    for package in packages:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
        (tmp_path / package / "probe.py").write_text(probe)
    done = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                           "--cache-dir", str(cache_dir() / "probe"), *(f"{p}/probe.py" for p in packages)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    errors = {(line.split(":")[0], line.split(":")[1], line.rsplit("[", 1)[-1].rstrip("]"))
              for line in done.stdout.splitlines() if ": error:" in line}
    for package in packages:
        # Strict: a function without annotations, a call of one, what returns Any; and at
        # every level, an annotated function that breaks its own annotation.
        probe_file = f"{package}/probe.py"
        assert {(probe_file, "1", "no-untyped-def"), (probe_file, "6", "no-untyped-call"),
                (probe_file, "6", "no-any-return"), (probe_file, "10", "return-value")} <= errors, done.stdout


def test_no_module_is_waived():
    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert mypy.get("strict") is True
    # The one override: pystemd ships no type information (an import, not a waiver of ocx's code).
    assert mypy.get("overrides", []) == [{"module": ["pystemd", "pystemd.*"], "ignore_missing_imports": True}]


def test_no_line_waives_the_checker():
    waived = [f"{path}:{number}" for path in scan.tracked_python_files() if path.startswith("ocx/")
              for number, line in enumerate((ROOT / path).read_text().splitlines(), 1) if "type: ignore" in line]
    assert not waived, f"type what mypy cannot see (a typed variable, a check), never waive it: {waived}"

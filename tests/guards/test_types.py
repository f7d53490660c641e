"""The type checker, as CI runs it: mypy over ocx/ with pyproject.toml's settings.

The modules pyproject.toml's first override lists (ocx/protocol, ocx/tools and
more) are held to mypy's strict level, the rest to its default level less the
debts it lists. mypy's cache lives outside the tree, in
the tests' cache on this host, so a run after a small change rechecks only
what changed (about 0.5 s warm, 11 s cold on these machines).
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

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


def test_the_checker_holds_protocol_and_tools_to_the_strict_level_and_the_rest_to_the_default(tmp_path):
    # One module, in ocx/protocol, ocx/tools and ocx/node, checked with the
    # project's settings (in a cache of its own: its names are ocx's).
    for package in ("ocx", "ocx/protocol", "ocx/tools", "ocx/node"):
        (tmp_path / package).mkdir(exist_ok=True)
        (tmp_path / package / "__init__.py").write_text("")
    probe = ("def twice(x):\n    return x * 2\n\n\n"
             "def label(x: int) -> str:\n    return twice(x)\n\n\n"
             "def wrong(x: int) -> str:\n    return x\n")
    for package in ("ocx/protocol", "ocx/tools", "ocx/node"):
        (tmp_path / package / "probe.py").write_text(probe)
    done = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                           "--cache-dir", str(cache_dir() / "probe"), "ocx/protocol/probe.py", "ocx/tools/probe.py", "ocx/node/probe.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    errors = {(line.split(":")[0], line.split(":")[1], line.rsplit("[", 1)[-1].rstrip("]"))
              for line in done.stdout.splitlines() if ": error:" in line}
    for strict in ("ocx/protocol/probe.py", "ocx/tools/probe.py"):
        # Strict: a function without annotations, a call of one, what returns Any.
        assert {(strict, "1", "no-untyped-def"), (strict, "6", "no-untyped-call"),
                (strict, "6", "no-any-return"), (strict, "10", "return-value")} <= errors, done.stdout
    # Every level: an annotated function that breaks its own annotation.
    assert ("ocx/node/probe.py", "10", "return-value") in errors, done.stdout
    # The default level asks for no annotations and trusts what has none.
    assert {e for e in errors if e[0] == "ocx/node/probe.py"} == {("ocx/node/probe.py", "10", "return-value")}, done.stdout

"""A wheel of OCX made from its own source tree with zipfile alone, for a node's first release (D45).

Made by `ocx demo --wheelhouse` (contrib/demo.sh) and bench/releases_inside.py, as root, from the
source tree OCX itself runs from (the admin's own, not a run's or a check-in's): SRC/pyproject.toml
and the regular files under SRC/ocx, no link followed, bytecode left out.

The test image and a fresh Debian host hold setuptools but not `wheel`; a wheel of pure Python
is a zip with its dist-info (PEP 427), so none is needed. Entries carry one fixed time, so the
same tree gives the same bytes: the release's name (the wheel's sha256, D45) is the tree's.
"""
from __future__ import annotations

import base64
import hashlib
import os
import tomllib
import zipfile
from pathlib import Path

# A zip's earliest time: the wheel's bytes depend on the files alone.
FIXED_TIME = (1980, 1, 1, 0, 0, 0)


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def source_files(src: Path) -> dict[str, bytes]:
    """SRC/ocx's regular files by their path relative to SRC: no link followed, no bytecode."""
    files: dict[str, bytes] = {}
    for directory, dirs, names in os.walk(src / "ocx", followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not os.path.islink(os.path.join(directory, d)))
        for name in sorted(names):
            path = Path(directory) / name
            if name.endswith(".pyc") or path.is_symlink() or not path.is_file():
                continue
            files[str(path.relative_to(src))] = path.read_bytes()
    return files


def _metadata(project: dict[str, object]) -> bytes:
    lines = ["Metadata-Version: 2.1", "Name: ocx", f"Version: {project['version']}"]
    requires = project.get("dependencies", [])
    assert isinstance(requires, list)
    lines += [f"Requires-Dist: {r}" for r in requires]
    extras = project.get("optional-dependencies", {})
    assert isinstance(extras, dict)
    for extra, wanted in extras.items():
        lines += [f"Provides-Extra: {extra}", *(f'Requires-Dist: {r}; extra == "{extra}"' for r in wanted)]
    return ("\n".join(lines) + "\n").encode()


def source_wheel(src: Path, directory: Path) -> Path:
    """ocx-VERSION-py3-none-any.whl of the source tree SRC, in DIRECTORY."""
    project = tomllib.loads((src / "pyproject.toml").read_text())["project"]
    version = str(project["version"])
    info = f"ocx-{version}.dist-info"
    entries = {**source_files(src),
               f"{info}/METADATA": _metadata(project),
               f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: ocx\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
               f"{info}/entry_points.txt": b"[console_scripts]\nocx = ocx.cli.launch:main\n"}
    record = "".join(f"{name},{_hash(data)},{len(data)}\n" for name, data in entries.items()) + f"{info}/RECORD,,\n"
    entries[f"{info}/RECORD"] = record.encode()
    path = directory / f"ocx-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in entries.items():
            entry = zipfile.ZipInfo(name, FIXED_TIME)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(entry, data)
    return path

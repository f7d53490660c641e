"""Wheels for the releases' tests, made with zipfile alone: the test image holds setuptools but not
`wheel`, and a wheel of pure Python is a zip with its dist-info (PEP 427)."""
from __future__ import annotations

import base64
import hashlib
import tomllib
import zipfile
from pathlib import Path


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(directory: Path, version: str, files: dict[str, bytes], requires: list[str],
               extras: dict[str, list[str]]) -> Path:
    """ocx-VERSION-py3-none-any.whl in DIRECTORY, holding FILES (path -> content)."""
    info = f"ocx-{version}.dist-info"
    metadata = ["Metadata-Version: 2.1", "Name: ocx", f"Version: {version}",
                *(f"Requires-Dist: {r}" for r in requires)]
    for extra, wanted in extras.items():
        metadata += [f"Provides-Extra: {extra}", *(f'Requires-Dist: {r}; extra == "{extra}"' for r in wanted)]
    entries = {**files, f"{info}/METADATA": ("\n".join(metadata) + "\n").encode(),
               f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: ocx-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join(f"{name},{_hash(data)},{len(data)}\n" for name, data in entries.items()) + f"{info}/RECORD,,\n"
    path = directory / f"ocx-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in entries.items():
            wheel.writestr(name, data)
        wheel.writestr(f"{info}/RECORD", record)
    return path


def working_tree_wheel(src: Path, directory: Path, appended: dict[str, bytes] | None = None) -> Path:
    """A wheel of the working tree's OCX, its dependencies as pyproject.toml names them; APPENDED: bytes
    added at the end of some of its files."""
    project = tomllib.loads((src / "pyproject.toml").read_text())["project"]
    files = {str(path.relative_to(src)): path.read_bytes() for path in sorted((src / "ocx").rglob("*"))
             if path.is_file() and "__pycache__" not in path.parts and not path.name.endswith(".pyc")}
    for name, tail in (appended or {}).items():
        files[name] += tail
    return make_wheel(directory, project["version"], files, project["dependencies"],
                      project.get("optional-dependencies", {}))


def build_wheel(wheel_directory: str, config_settings: object = None, metadata_directory: object = None) -> str:
    """PEP 517's one required hook: this module is also a check-in's in-tree build backend
    (`backend-path = ["."]`), for a check-in staged with no build requirement in any wheelhouse."""
    return working_tree_wheel(Path.cwd(), Path(wheel_directory)).name

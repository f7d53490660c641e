"""The build's own steps (ocx/release_build/build.py, D45), run here as this test's user rather than
in the build's unit (the unit is tests/node_system/test_releases_stage.py's): a virtual environment
made and filled offline from the wheels given, the smoke, the name, and the refusals."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from ocx.fossil.program import run_fossil
from ocx.fossil.secretless_copy import copy_without_secrets
from ocx.node.config import NodeConfig
from ocx.node.releases.links import Releases
from ocx.release_build.build import _smoke_status, main
from tests.node_system.release_wheels import make_wheel

CHECKIN = "d" * 64
LAUNCH = b"import sys\nprint('ocx 9.9 (a test release) from', sys.prefix)\n"
PACKAGE = {"ocx/__init__.py": b"", "ocx/cli/__init__.py": b"", "ocx/cli/launch.py": LAUNCH}


def build(tmp_path: Path, files: dict[str, bytes], requires: list[str]) -> tuple[int, Path]:
    root, inputs = tmp_path / "releases", tmp_path / "inputs"
    (root / "staged").mkdir(parents=True)
    (inputs / "wheel").mkdir(parents=True)
    (inputs / "wheels").mkdir()
    make_wheel(inputs / "wheel", "9.9", files, requires, {})
    code = main(["--root", str(root), "--inputs", str(inputs), "--checkin", CHECKIN, "--token", "0" * 16])
    return code, root


def test_a_wheel_is_built_smoked_named_and_recorded(tmp_path: Path) -> None:
    code, root = build(tmp_path, PACKAGE, [])
    staged = root / "staged"
    release = (staged / f"{'0' * 16}.done").read_text()
    assert code == 0 and release.startswith(CHECKIN[:16] + "-")
    recorded = Releases(str(root)).staged(release)  # what root reads back, as root would
    assert recorded.checkin == CHECKIN
    assert recorded.smoke["version"] == f"passed: ocx 9.9 (a test release) from {staged}/build-{'0' * 16}"
    assert (staged / release / "wheels" / "ocx-9.9-py3-none-any.whl").is_file()  # for the next stage
    assert not (staged / f"build-{'0' * 16}").exists() and sorted(os.listdir(staged)) == sorted(
        [release, f"{release}.json", f"{'0' * 16}.done"])


def test_a_dependency_in_no_wheel_given_is_refused_naming_it(tmp_path: Path) -> None:
    code, root = build(tmp_path, PACKAGE, ["nowhere-to-be-found>=1"])
    assert code == 1
    said = (root / "staged" / f"{'0' * 16}.failed").read_text()
    assert said.startswith("dependency: nowhere-to-be-found>=1 is in no wheel given"), said
    assert [name for name in os.listdir(root / "staged") if name.endswith(".json")] == []


@pytest.mark.parametrize("launch,why", [(b"import sys\nsys.exit(4)\n", "exit 4"),
                                        (b"print('ocx 9.9 from elsewhere')\n", "exit 0: ocx 9.9 from elsewhere")])
def test_a_smoke_that_fails_or_names_another_release_stages_nothing(tmp_path: Path, launch: bytes, why: str) -> None:
    code, root = build(tmp_path, {**PACKAGE, "ocx/cli/launch.py": launch}, [])
    assert code == 1
    said = (root / "staged" / f"{'0' * 16}.failed").read_text()
    assert said.startswith(f"smoke: version failed: {why}"), said
    assert not any(name.endswith(".json") for name in os.listdir(root / "staged"))


def test_the_record_is_json_root_reads_whole(tmp_path: Path) -> None:
    code, root = build(tmp_path, PACKAGE, [])
    release = (root / "staged" / f"{'0' * 16}.done").read_text()
    fields = json.loads((root / "staged" / f"{release}.json").read_text())
    assert code == 0 and set(fields) == {"checkin", "digest", "smoke"} and release.endswith(fields["digest"][:16])


def smoke_inputs(tmp_path: Path, configuration: str | None = None) -> tuple[str, str]:
    """A node's repository copied as root copies it for the build, and its configuration beside."""
    home = tmp_path / "home"
    run_fossil(["init", str(tmp_path / "served.fossil")], home=home, user="root")
    (tmp_path / "smoke").mkdir()
    copy_without_secrets(tmp_path / "served.fossil", tmp_path / "smoke" / "n1.fossil", home=home)
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "n1.json").write_text(configuration or NodeConfig(
        name="n1", repository="/var/lib/ocx/n1/served.fossil", url="http://127.0.0.1:9").model_dump_json())
    return str(tmp_path / "smoke"), str(tmp_path / "config")


def test_the_status_step_is_answered_by_the_page_against_the_copy(tmp_path: Path) -> None:
    """The page of the python given (here this test's own OCX) answers `status` in-process, as `nobody`,
    naming the copy's server-code; the copy given is not written (the step works on its own copy)."""
    copies, configurations = smoke_inputs(tmp_path)
    before = (Path(copies) / "n1.fossil").read_bytes()
    said = _smoke_status(sys.executable, str(tmp_path), copies, configurations, "1" * 16)
    assert said.startswith("passed: status answered nobody on node "), said
    assert (Path(copies) / "n1.fossil").read_bytes() == before


def test_a_status_step_the_page_cannot_answer_fails(tmp_path: Path) -> None:
    copies, configurations = smoke_inputs(tmp_path, configuration="{not a configuration")
    said = _smoke_status(sys.executable, str(tmp_path), copies, configurations, "2" * 16)
    assert said.startswith("failed: exit 1: "), said

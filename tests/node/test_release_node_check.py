"""The smoke's `node_check` (ocx/release_build/build.py, D45, D48): the staged release's node reads each
node's configuration as at its start, against the secretless copy of its real repository the `status`
step has. Run here as this test's user with this test's python as the "staged release" (the unit and a
real staged release are tests/node_system/test_release_preview_page.py's)."""
from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fossil.conftest import Served, start_served  # tests/fossil's real server

from ocx.fossil.secretless_copy import copy_without_secrets
from ocx.node.config import NodeConfig
from ocx.release_build import build
from ocx.release_build.build import _smoke_node_check

pytestmark = pytest.mark.fossil

GOOD = '```json\n{"command": ["true"]}\n```\n'


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    running = start_served(tmp_path_factory.mktemp("served"), {"ocx-node": "24cgir", "alice": "i4"})
    try:
        admin = running.clone("admin")
        admin.write_wiki("sandbox/good", GOOD)
        admin.write_wiki("sandbox/broken", "no JSON block here\n")
        admin.write_wiki("Sandbox/upper", GOOD)  # not a runner page: names are compared exactly
        running.clone("alice").write_wiki("sandbox/alice", GOOD)  # no admin's version: counts for nothing (D14)
        yield running
    finally:
        running.server.stop()


def inputs(served: Served, tmp_path: Path, **fields: object) -> tuple[str, str]:
    """The copy root makes for the build and the node's configuration beside it, as staging gives them."""
    (tmp_path / "smoke").mkdir()
    copy_without_secrets(served.path, tmp_path / "smoke" / "n1.fossil", home=tmp_path / "home")
    (tmp_path / "config").mkdir()
    config = NodeConfig(name="n1", repository="/var/lib/ocx/n1/served.fossil", url="http://127.0.0.1:9")
    (tmp_path / "config" / "n1.json").write_text(config.model_copy(update=fields).model_dump_json())
    return str(tmp_path / "smoke"), str(tmp_path / "config")


def test_the_node_reads_its_configuration_login_and_runner_pages_from_the_copy(served: Served,
                                                                                tmp_path: Path) -> None:
    copies, configurations = inputs(served, tmp_path)
    before = (Path(copies) / "n1.fossil").read_bytes()
    with served.repository() as repository:
        code = repository.server_code
    said = _smoke_node_check(sys.executable, str(tmp_path), copies, configurations, "1" * 16)
    assert said == (f"passed: node {code[:16]} (n1) read as at its start; node user ocx-node holds 24cgir; "
                    "runner pages read: good"), said
    assert (Path(copies) / "n1.fossil").read_bytes() == before  # the step reads its own copy


def test_the_runner_pages_are_named_exactly(served: Served) -> None:
    with served.repository() as repository:
        assert repository.wiki_names("sandbox/", 10) == ["sandbox/alice", "sandbox/broken", "sandbox/good"]
        assert repository.wiki_names("sandbox/", 1) == ["sandbox/alice"]  # bounded
        assert repository.wiki_names("sandbox_", 10) == []  # no LIKE pattern


@pytest.mark.parametrize("fields,why", [
    ({"node_user": "ocx-node-gone"}, "node_user: ocx-node-gone is not a login of the repository (D20)"),
    ({"node_user": "alice"}, "node_user: alice lacks the letters 2cgr (D20)"),
    ({"cpu_quota": 0.0}, "cpu_quota: not positive: every run's unit would be refused (D17)"),
])
def test_a_configuration_the_node_could_not_serve_fails_naming_the_field(served: Served, tmp_path: Path,
                                                                        fields: dict[str, object], why: str) -> None:
    copies, configurations = inputs(served, tmp_path, **fields)
    said = _smoke_node_check(sys.executable, str(tmp_path), copies, configurations, "2" * 16)
    assert said == f"failed: exit 3: {why}", said


def test_a_configuration_the_release_cannot_read_fails(served: Served, tmp_path: Path) -> None:
    copies, configurations = inputs(served, tmp_path)
    (Path(configurations) / "n1.json").write_text('{"name": "n1", "a_field_of_later": 1}')
    said = _smoke_node_check(sys.executable, str(tmp_path), copies, configurations, "3" * 16)
    assert said.startswith("failed: exit 1: ") and "a_field_of_later" in said, said


def test_a_node_elsewhere_leaves_its_login_and_pages_to_the_server(served: Served, tmp_path: Path) -> None:
    copies, configurations = inputs(served, tmp_path, elsewhere=True, node_user="ocx-node-gone")
    said = _smoke_node_check(sys.executable, str(tmp_path), copies, configurations, "4" * 16)
    assert said.startswith("passed: ") and "the server node's to read (D37)" in said, said


def test_a_page_the_node_reads_today_and_the_staged_release_refuses_fails(
        served: Served, tmp_path: Path) -> None:
    """The release that stages reads sandbox/broken (as an older parser might have); the staged one
    refuses it: the node would refuse records it runs today, so nothing is staged."""
    real = build._runner_verdicts

    def staging_reads_broken(copy: str) -> tuple[list[str], dict[str, str | None]]:
        names, verdicts = real(copy)
        return names, {**verdicts, "broken": None}

    copies, configurations = inputs(served, tmp_path)
    said = _smoke_node_check(sys.executable, str(tmp_path), copies, configurations, "5" * 16,
                             runner_verdicts=staging_reads_broken)
    assert said.startswith("failed: runner: pages the node reads today refused by this release: broken: "), said
    assert "holds no fenced ```json block" in said, said

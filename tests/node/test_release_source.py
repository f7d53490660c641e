"""A release staged from a repository of OCX's source the node's configuration names (D45): the choice
is a file beside the configuration (never a field an older release would refuse), read bounded with
no link followed; the named repository is read through the Fossil layer, refused naming
`release_source` when it is not a Fossil repository only its owner may change; a check-in is gated
there by D25's rule and its tree written from there; one it does not hold is refused, naming it.
Two real Fossil servers: the node's served repository and a second one holding the source."""
from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fossil.conftest import Served, start_served  # tests/fossil's real server

from ocx.cli.cli_release_source import checkin_of_named_source
from ocx.fossil.checkin_tree import NotASourceRepository, source_repository
from ocx.node.releases.source import named_source, set_source, source_file
from ocx.reading.release_gate import NotPassed, passing_checkin_of_source

SOURCE_LOGINS = {"alice": "i4", "bob": "i4"}  # alice commits, bob judges her check-in


@dataclass
class Source:
    served: Served
    passed: str  # bob's counted ci pass
    plain: str  # no verdict at all
    failed: str  # bob's counted ci fail


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Source]:
    served = start_served(tmp_path_factory.mktemp("source"), SOURCE_LOGINS)
    try:
        passed = served.commit("alice", "ci.py", 'print("checked")\n')
        plain = served.commit("alice", "plain.txt", "nobody judged this\n")
        failed = served.commit("alice", "failed.txt", "bob found a fault\n")
        served.clone("bob").tag(passed, "ci", "pass: exit 0 (against ci.py)")
        served.clone("bob").tag(failed, "ci", "fail: exit 1 (against ci.py)")
        yield Source(served, passed, plain, failed)
    finally:
        served.server.stop()


def test_no_file_beside_the_configuration_means_the_served_repository(tmp_path: Path) -> None:
    assert named_source("n1", tmp_path) is None


def test_the_choice_is_a_file_beside_the_configuration_not_a_field_of_it(tmp_path: Path) -> None:
    written = set_source("n1", "/srv/ocx-source.fossil", tmp_path)
    assert written == tmp_path / "n1.release-source" and not written.name.endswith(".json")
    assert json.loads(written.read_text()) == {"release_source": "/srv/ocx-source.fossil"}
    assert os.stat(written).st_mode & 0o777 == 0o644
    assert named_source("n1", tmp_path) == "/srv/ocx-source.fossil"
    set_source("n1", None, tmp_path)
    assert not written.exists() and named_source("n1", tmp_path) is None


@pytest.mark.parametrize("text", ['{"release_source": "relative/path.fossil"}', '{"release_source": 3}',
                                  '{"release_source": "/a.fossil", "more": 1}', "not json", "[]",
                                  '{"release_source": "/' + "a" * 5000 + '"}'])
def test_a_file_that_cannot_be_taken_as_it_is_is_refused_naming_the_field(tmp_path: Path, text: str) -> None:
    source_file("n1", tmp_path).write_text(text)
    with pytest.raises(ValueError, match="^release_source: "):
        named_source("n1", tmp_path)


def test_a_linked_choice_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").write_text('{"release_source": "/srv/x.fossil"}')
    source_file("n1", tmp_path).symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ValueError, match="^release_source: "):
        named_source("n1", tmp_path)


def test_what_is_not_a_fossil_repository_only_its_owner_may_change_is_refused(source: Source,
                                                                              tmp_path: Path) -> None:
    (tmp_path / "text.fossil").write_text("not a database\n")
    sqlite3.connect(tmp_path / "other.db").execute("CREATE TABLE config(name, value)").connection.close()
    os.symlink(source.served.path, tmp_path / "link.fossil")
    shared = tmp_path / "shared.fossil"
    shared.write_bytes(source.served.path.read_bytes())
    os.chmod(shared, 0o664)
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    (open_dir / "copy.fossil").write_bytes(source.served.path.read_bytes())
    os.chmod(open_dir, 0o777)
    refused = {"text.fossil": "is not a Fossil repository", "other.db": "is not a Fossil repository",
               "link.fossil": "is not a regular file", "shared.fossil": "the file may be changed by others",
               "open/copy.fossil": "its directory may be changed by others", "absent.fossil": "No such file"}
    for name, why in refused.items():
        with pytest.raises(NotASourceRepository, match=f"^release_source: .*{why}"):
            source_repository(str(tmp_path / name)).close()
    with pytest.raises(NotASourceRepository, match="is not an absolute path"):
        source_repository("served.fossil")
    with source_repository(str(source.served.path)) as repository:
        assert repository.project_code


def test_a_checkin_is_gated_by_its_verdicts_in_the_named_repository(source: Source) -> None:
    path = str(source.served.path)
    assert passing_checkin_of_source(path, source.passed[:12]) == source.passed
    with pytest.raises(NotPassed, match=f"^checkin: {source.plain} has no counted ci verdict"):
        passing_checkin_of_source(path, source.plain)
    with pytest.raises(NotPassed, match=f"^checkin: {source.failed} has a failing counted ci verdict \\(bob: fail"):
        passing_checkin_of_source(path, source.failed)


def test_a_checkin_the_named_repository_does_not_hold_is_refused_naming_it(source: Source, served: Served) -> None:
    """A check-in of the node's served repository is not taken from there when a source is named."""
    elsewhere = served.commit("alice", "only-served.txt", "in the served repository only\n")
    with pytest.raises(NotPassed, match=f"^checkin: {elsewhere[:12]} is not a check-in of release_source "):
        passing_checkin_of_source(str(source.served.path), elsewhere[:12])


def test_the_stage_reads_the_checkin_and_writes_its_tree_from_the_named_repository(
        source: Source, tmp_path: Path) -> None:
    etc = tmp_path / "etc"
    assert checkin_of_named_source("n1", source.passed[:12], etc) is None  # none named: the served repository's
    set_source("n1", str(source.served.path), etc)
    found = checkin_of_named_source("n1", source.passed[:12], etc)
    assert found is not None
    checkin, fill = found
    assert checkin == source.passed
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    fill(str(inputs))
    assert (inputs / "source" / "ci.py").read_text() == 'print("checked")\n'
    assert not (inputs / "source" / "plain.txt").exists()  # committed after it
    with pytest.raises(NotPassed, match="has no counted ci verdict"):
        checkin_of_named_source("n1", source.plain, etc)
    source_file("n1", etc).write_text("{}")
    with pytest.raises(ValueError, match="^release_source: "):
        checkin_of_named_source("n1", source.passed, etc)

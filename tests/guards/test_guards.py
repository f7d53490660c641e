"""Standing checks on the tree: each fails when the rule it names is broken."""
from __future__ import annotations

import pytest

from . import scan

FILES = scan.tracked_python_files()
OCX = [path for path in FILES if path.startswith("ocx/")]


def source(path: str) -> str:
    return (scan.ROOT / path).read_text()


def layer(path: str) -> str | None:
    parts = path.split("/")
    return parts[1] if len(parts) > 2 else None


def test_there_is_code_to_guard():
    assert "ocx/protocol/messages.py" in FILES and len(OCX) > 5


def test_python_files_stay_under_400_lines():
    long = {path: n for path in FILES if (n := len(source(path).splitlines())) > scan.MAX_LINES}
    assert not long, f"split these along a real seam: {long}"


def test_only_the_fossil_layer_runs_fossil_or_opens_a_repository():
    offenders = [path for path in OCX if layer(path) != "fossil"
                 and (scan.runs_program(source(path), "fossil") or scan.opens_sqlite(source(path)))]
    assert not offenders


@pytest.mark.parametrize("program,homes", sorted(scan.PROGRAM_HOMES.items()))
def test_each_program_is_run_from_one_place(program, homes):
    runners = {path for path in OCX if scan.runs_program(source(path), program)}
    assert runners <= homes, f"{program} is run from {sorted(runners - homes)}"


def test_subprocess_is_used_only_where_a_program_lives():
    users = {path for path in OCX if "subprocess" in {m.split(".")[0] for m in scan.imported_modules(source(path))}}
    assert users == scan.SUBPROCESS_HOMES, (sorted(users - scan.SUBPROCESS_HOMES), sorted(scan.SUBPROCESS_HOMES - users))


def test_a_process_is_forked_or_execd_by_hand_only_where_one_is_named():
    users = {path for path in OCX if scan.EXEC_CALL.search(source(path))}
    assert users == scan.EXEC_HOMES, (sorted(users - scan.EXEC_HOMES), sorted(scan.EXEC_HOMES - users))


def test_only_the_systemd_layer_imports_a_dbus_library():
    offenders = [path for path in OCX if layer(path) != "systemd"
                 and {m.split(".")[0] for m in scan.imported_modules(source(path))} & scan.DBUS_LIBRARIES]
    assert not offenders


def test_layers_import_downwards_only():
    offenders = []
    for path in OCX:
        own = layer(path)
        if own not in scan.LAYER_MAY_IMPORT:
            continue
        package = path[:-3].replace("/", ".").removesuffix(".__init__")
        if path.endswith("__init__.py"):
            package += ".__init__"
        modules = scan.imported_modules(source(path)) | scan.relative_imports(source(path), package)
        for module in modules:
            parts = module.split(".")
            if parts[0] == "ocx" and len(parts) > 1 and parts[1] not in scan.LAYER_MAY_IMPORT[own]:
                offenders.append(f"{path} imports {module}")
    assert not offenders


def test_the_protocol_layer_does_no_io():
    forbidden = {"subprocess", "socket", "sqlite3", "os", "urllib", "http", "time", "datetime", "pathlib", "asyncio"}
    offenders = {path: mods for path in OCX if layer(path) == "protocol"
                 and (mods := {m.split(".")[0] for m in scan.imported_modules(source(path))} & forbidden)}
    assert not offenders


def test_no_test_replaces_a_real_part_with_a_mock():
    offenders = {path: hits for path in FILES if path.startswith("tests/") and not path.startswith("tests/guards/")
                 and (hits := scan.mocks_something(source(path)))}
    assert not offenders


# The guards' own detectors, shown to fail on what they must catch.

def test_detectors_catch_what_they_guard_against():
    assert scan.runs_program('import subprocess\nsubprocess.run(["fossil", "sql"])', "fossil")
    assert scan.runs_program('run(("/usr/bin/fossil", "new", path))', "fossil")
    assert not scan.runs_program('print("fossil is a VCS")', "fossil")
    assert scan.opens_sqlite("import sqlite3\n")
    assert scan.opens_sqlite("from sqlite3 import connect\n")
    magic = "Magic" + scan._MOCK
    assert magic in scan.mocks_something(f"from unittest.{scan._MOCK.lower()} import {magic}")
    assert scan.mocks_something(f"def test(monkeypatch):\n    {scan.MONKEYPATCH_SET}(x, 'y', 1)")
    assert scan.imported_modules("import dbus_next.aio\nfrom pystemd.systemd1 import Unit") == {"dbus_next.aio", "pystemd.systemd1"}
    assert scan.relative_imports("from ..fossil import repository", "ocx.node_service.intake") == {"ocx.fossil"}
    assert scan.relative_imports("from . import x", "ocx.node_service.intake") == {"ocx.node_service"}

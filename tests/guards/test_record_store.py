"""A record's marks are written and removed only through its store (ocx/node/record_store.py; docs/node.md,
'A record's life').

RecordStore checks every change against states.py's table; a mark written
beside it (a file named as a mark, a write or an unlink of the file its
reader is given) would change a record's state behind the table. Fails when
a module of ocx/ other than the store names a mark's file (`record.json`,
`ended-STEM.json`, ...), takes one of the store's private helpers, or writes,
renames or removes a path made from a mark or from the store's `saved_file`.
The detector is shown catching each, and passing the store's own ways.
"""
from __future__ import annotations

import ast

from ocx.node.states import RECORD_MARKS, RUN_MARKS

from . import scan

STORE = "ocx/node/record_store.py"
RECORD_FILES = {f"{mark.value}.json" for mark in RECORD_MARKS}
RUN_PREFIXES = tuple(f"{mark.value}-" for mark in RUN_MARKS)
# What writes, renames or removes a file: a method of its path, or a function given it.
CHANGING_METHODS = {"write_text", "write_bytes", "unlink", "rename", "replace", "touch", "rmdir", "symlink_to",
                    "hardlink_to"}
CHANGING_FUNCTIONS = {"write_atomically", "replace", "rename", "remove", "unlink", "move", "copy", "copyfile",
                      "copy2", "rmtree", "open"}


def _names_a_mark_file(node: ast.AST) -> bool:
    """A text that is a mark's file name: `record.json`, or a run's `ended-` ... `.json`, whole or in an f-string."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value
        return text in RECORD_FILES or (text.startswith(RUN_PREFIXES) and text.endswith(".json"))
    if isinstance(node, ast.JoinedStr) and node.values:
        first, last = node.values[0], node.values[-1]
        return (isinstance(first, ast.Constant) and isinstance(first.value, str)
                and first.value.startswith(RUN_PREFIXES)
                and isinstance(last, ast.Constant) and isinstance(last.value, str) and last.value.endswith(".json"))
    return False


def _made_from_a_mark(node: ast.AST) -> bool:
    """An expression that holds a mark (Mark.ENDED) or the store's file (its `saved_file()`)."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name) and inner.value.id == "Mark":
            return True
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr == "saved_file":
            return True
        if _names_a_mark_file(inner):
            return True
    return False


def _callee(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def mark_writes_outside_the_store(path: str, source: str) -> list[str]:
    """Each place in SOURCE (the text of PATH) that names, writes or removes a mark's file beside the store."""
    if path == STORE:
        return []
    found = []
    tree = ast.parse(source)
    prose = {id(node.value) for node in ast.walk(tree)  # a docstring may name one
             if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if id(node) in prose:
            continue
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("record_store"):
            found += [f"{path}:{line} takes record_store.{alias.name}" for alias in node.names
                      if alias.name.startswith("_")]
        elif (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
              and isinstance(node.value, ast.Name) and node.value.id == "record_store"):
            found.append(f"{path}:{line} takes record_store.{node.attr}")
        elif _names_a_mark_file(node):
            found.append(f"{path}:{line} names a mark's file")
        elif isinstance(node, ast.Call):
            callee = _callee(node)
            receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
            if callee in CHANGING_METHODS and receiver is not None and _made_from_a_mark(receiver):
                found.append(f"{path}:{line} {callee}s a mark's file")
            elif callee in CHANGING_FUNCTIONS and any(_made_from_a_mark(arg) for arg in node.args):
                found.append(f"{path}:{line} {callee}s a mark's file")
    return sorted(set(found))


def test_no_module_but_the_store_writes_or_removes_a_mark():
    offenders = []
    for path in scan.tracked_python_files():
        if path.startswith("ocx/"):
            offenders += mark_writes_outside_the_store(path, (scan.ROOT / path).read_text())
    assert offenders == [], "marks are changed only through RecordStore (ocx/node/record_store.py):\n" + "\n".join(
        offenders)


def test_the_detector_catches_a_mark_written_named_or_removed_beside_the_store():
    path = "ocx/node_service/x.py"
    assert mark_writes_outside_the_store(path, 'write_atomically(directory / "ended-x.json", "{}")\n') == [
        f"{path}:1 names a mark's file", f"{path}:1 write_atomicallys a mark's file"]
    assert mark_writes_outside_the_store(path, 'p = d / f"verdict-{stem}.json"\n') == [f"{path}:1 names a mark's file"]
    assert mark_writes_outside_the_store(path, "(d / 'stop.json').unlink()\n") == [
        f"{path}:1 names a mark's file", f"{path}:1 unlinks a mark's file"]
    assert mark_writes_outside_the_store(path, "store.saved_file().write_text('{}')\n") == [
        f"{path}:1 write_texts a mark's file"]
    assert mark_writes_outside_the_store(path, "os.replace(tmp, d / name(Mark.ANSWERED))\n") == [
        f"{path}:1 replaces a mark's file"]
    assert mark_writes_outside_the_store(path, "from ..node.record_store import _file_name\n") == [
        f"{path}:1 takes record_store._file_name"]
    assert mark_writes_outside_the_store(path, "x = record_store._listed(d)\n") == [
        f"{path}:1 takes record_store._listed"]


def test_the_detector_passes_the_stores_own_ways_and_other_files():
    path = "ocx/node_service/x.py"
    allowed = ('"""A docstring may name record.json and ended-STEM.json."""\n'
               "store.mark(Mark.ENDED, body, stem)\n"
               "store.reset(stem)\n"
               "body = store.marked(Mark.STOP)\n"
               "text = store.saved_file().read_text()\n"
               'write_atomically(d / "failures.json", "{}")\n'
               'write_atomically(d / f"cpu-{stem}.json", "{}")\n'
               "from ..node.record_store import RecordStore, one_look\n")
    assert mark_writes_outside_the_store(path, allowed) == []
    assert mark_writes_outside_the_store(STORE, 'write_atomically(d / "record.json", "{}")\n') == []

"""Reading the project's own source for the guards: pure functions over text."""
from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 400

# Each external program is run from one place (the brief; architecture.md).
PROGRAM_HOMES = {"systemctl": {"ocx/systemd/system_state.py"}, "fossil": {"ocx/fossil/program.py"},
                 "useradd": {"ocx/setup/account.py"}, "journalctl": {"ocx/systemd/journal_tail.py"},
                 # page/git_door.py: the ext door of /ext/git execs `git http-backend`, standard library only (D49)
                 "git": {"ocx/git/program.py", "ocx/page/git_door.py"}}
SUBPROCESS_HOMES = {
    "ocx/systemd/system_state.py",  # systemctl is-system-running (D4)
    "ocx/fossil/program.py",  # fossil
    "ocx/inside_run/relay.py",  # the program a runner page names behind the relay (D14)
    "ocx/setup/account.py",  # useradd: the Fossil server's account (D27)
    "ocx/systemd/journal_tail.py",  # journalctl: what a run printed, for the console (docs/console.md)
    "ocx/git/program.py",  # git: the node's git mirror and the way back (D49, D50)
    "ocx/release_build/build.py",  # pip and the staged release's smoke, as the build user in its unit (D48)
}
# Where a process is forked or exec'd by hand, not through subprocess: each for a reason of its own.
EXEC_HOMES = {
    "ocx/inside_run/spawn.py",  # the feeder starts a run's program: subprocess's imports were a third of its start (D13)
    "ocx/page/page_door.py",  # the door becomes the page's process (D30)
    "ocx/page/git_door.py",  # the door becomes git http-backend (D49)
    "ocx/page/page_service.py",  # a request answered in a child of the page's service
    "ocx/run_steps/step_server.py",  # a run's step forked already loaded by the step service
}
EXEC_CALL = re.compile(r"\bos\.(?:exec[lv]p?e?|fork|forkpty|posix_spawnp?|spawn[lv]p?e?)\(")
DBUS_LIBRARIES = {"dbus_next", "dbus_fast", "pystemd", "dbus", "jeepney", "sdbus"}
# Layers import downwards only (architecture.md): the processes' packages on top, each named for
# the process that runs it; beneath them the shared layer. Which modules of another process a
# process may import (the entries it starts) is tests/guards/test_processes.py's.
SHARED = {"node", "tools", "reading", "protocol", "fossil", "systemd", "git", "files"}
PROCESSES = {"node_service", "run_steps", "inside_run", "page", "tool_service", "follower", "setup", "cli", "hook",
             "release_build"}
LAYER_MAY_IMPORT = {
    "protocol": {"protocol"},
    "fossil": {"fossil", "protocol", "files"},  # files: ocx/files.py, writing a file whole
    "systemd": {"systemd", "protocol", "files"},
    "git": {"git", "protocol", "fossil", "files"},  # git's own program and the mirror's files (D49, D50)
    "node": {"node", "protocol", "fossil", "systemd", "files"},
    "reading": {"reading", "protocol", "fossil", "systemd", "files"},  # readers of verdicts (V2, D25, D33)
    "tools": {"tools", "node", "reading", "protocol", "fossil", "systemd", "files"},
    **{process: {process} | SHARED for process in PROCESSES},
    "inside_run": {"inside_run", "protocol", "node"},  # node: host_paths and inotify alone (test_processes.py)
    "cli": {"cli"} | SHARED | {"node_service", "follower", "setup", "hook"},  # the entries it starts
    "node_service": {"node_service", "run_steps"} | SHARED,  # a run without network is prepared here (D34)
}


def tracked_python_files() -> list[str]:
    """Files git tracks or would track (untracked, not ignored)."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return sorted(path for path in out.splitlines() if (ROOT / path).is_file())


def imported_modules(source: str) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def relative_imports(source: str, package: str) -> set[str]:
    """`from ..fossil import x` inside ocx/node → {"ocx.fossil"}."""
    parts = package.split(".")
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = parts[: len(parts) - node.level]
            found.add(".".join(base + ([node.module] if node.module else [])))
    return found


def runs_program(source: str, program: str) -> bool:
    """Whether SOURCE spawns PROGRAM by name: a call whose argv starts with it."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
            first = node.elts[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                if first.value == program or first.value.endswith("/" + program):
                    return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value.startswith(program + " ") and "subprocess" in source:
                return True
    return False


def opens_sqlite(source: str) -> bool:
    return "sqlite3" in {name.split(".")[0] for name in imported_modules(source)}


# Spelled in pieces, so that the project's before-stop check, which greps the
# tests for these words, does not take the guard itself for a mock.
_MOCK, _PATCH = "Mock", "patch"
MOCK_MARKERS = ("unittest." + _MOCK.lower(), "from unittest import " + _MOCK.lower(), "Magic" + _MOCK,
                _MOCK.lower() + "." + _PATCH, "mocker.", "pytest_" + _MOCK.lower())
MONKEYPATCH_SET = "monkey" + _PATCH + ".setattr"


def mocks_something(source: str) -> list[str]:
    hits = [marker for marker in MOCK_MARKERS if marker in source]
    if MONKEYPATCH_SET in source:
        hits.append(MONKEYPATCH_SET)
    return hits


BROAD = {"Exception", "BaseException"}


def _is_broad(kind: ast.expr | None) -> bool:
    if kind is None:  # a bare `except:`
        return True
    if isinstance(kind, ast.Tuple):
        return any(_is_broad(element) for element in kind.elts)
    return isinstance(kind, (ast.Name, ast.Attribute)) and (kind.id if isinstance(kind, ast.Name) else kind.attr) in BROAD


def _re_raises(handler: ast.ExceptHandler) -> bool:
    """Cleans up and passes the error on: its last statement is a bare `raise`."""
    last = handler.body[-1]
    return isinstance(last, ast.Raise) and last.exc is None


def broad_catches(source: str) -> list[str]:
    """The enclosing function (`Class.method`, or `<module>`) of each handler that
    catches everything (Exception, BaseException, a bare except) and keeps it,
    once per handler; one that only cleans up and re-raises is not a catch."""
    found: list[str] = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, child.name if where == "<module>" else f"{where}.{child.name}")
                continue
            if isinstance(child, ast.ExceptHandler) and _is_broad(child.type) and not _re_raises(child):
                found.append(where)
            visit(child, where)

    visit(ast.parse(source), "<module>")
    return found

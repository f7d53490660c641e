"""D41 as standing checks: root's code never reads what a run can write except
through the bounded module, never imports the run's own code, and every
privileged step runs Python isolated."""
from __future__ import annotations

import ast
import re

from . import boundary, scan

FILES = scan.tracked_python_files()
ROOT_SIDE = boundary.root_side_files(FILES)


def test_the_root_side_is_what_it_says():
    assert {"ocx/node_service/intake.py", "ocx/run_steps/stop_step.py", "ocx/run_steps/prepare.py",
            "ocx/tool_service/tool_socket.py", "ocx/tools/push.py", "ocx/node/bounded.py"} <= ROOT_SIDE


def test_root_never_imports_what_runs_inside_a_run():
    assert not sorted(path for path in ROOT_SIDE if path.startswith(boundary.IN_RUN))


def test_root_touches_what_a_run_writes_only_through_the_bounded_module():
    touches = [str(t) for path in sorted(ROOT_SIDE) for t in boundary.touches_in(path, (scan.ROOT / path).read_text())]
    assert not touches, "\n".join(touches)


def test_every_allowance_names_a_function_that_exists():
    for (path, function), uses in boundary.ALLOWED.items():
        names = {n.name for n in ast.walk(ast.parse((scan.ROOT / path).read_text()))
                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        assert function in names, f"{path} has no {function}: drop it from ALLOWED"
        assert all(why for why in uses.values())


def _privileged_argvs(source: str) -> list[ast.expr]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "ExecCommand":
            keywords = {k.arg: k.value for k in node.keywords}
            privileged = keywords.get("privileged")
            if isinstance(privileged, ast.Constant) and privileged.value is True:
                found.append(keywords.get("argv", node.args[0] if node.args else None))
    return found


def _isolated(argv: ast.expr | None) -> bool:
    """A python_module(...) call, or a literal list whose second item is "-I"."""
    if isinstance(argv, ast.Call):
        return getattr(argv.func, "id", None) == "python_module"
    return (isinstance(argv, ast.List) and len(argv.elts) > 1 and isinstance(argv.elts[1], ast.Constant)
            and argv.elts[1].value == "-I")


def test_every_privileged_step_runs_python_isolated():
    steps = {path: argvs for path in FILES if path.startswith("ocx/")
             and (argvs := _privileged_argvs((scan.ROOT / path).read_text()))}
    assert "ocx/node_service/run_units.py" in steps  # the preparation and the stop step
    offenders = [path for path, argvs in steps.items() if not all(_isolated(a) for a in argvs)]
    assert not offenders


def test_every_python_a_unit_file_starts_is_isolated():
    lines = [line for unit in sorted((scan.ROOT / "units").iterdir())
             for line in unit.read_text().splitlines() if re.match(r"Exec\w*=.*python", line)]
    assert lines and all(re.search(r"python -I -m ", line) for line in lines), lines


# The detector itself, on snippets: each names what it must catch.

def _touches(snippet: str, path: str = "ocx/node_service/example.py") -> list[str]:
    return [t.what for t in boundary.touches_in(path, snippet)]


def test_the_guard_catches_a_read_of_a_run_path_however_it_is_spelled():
    assert _touches("def f(home):\n    return (home.on_host / LAST_LINE).read_text()\n") == [
        ".read_text() on a run's path"]
    assert _touches("def f(home):\n    path = str(home.on_host) + '/x'\n    with open(path) as h:\n"
                    "        return h.read()\n") == ["a run's path passed to open()"]
    assert _touches("import shutil\ndef f(home):\n    shutil.rmtree(home.on_host)\n") == [
        "a run's path passed to rmtree()"]
    assert _touches("def f(stem):\n    for p in copy_path(RunHome(stem).on_host, 0).iterdir():\n        p.exists()\n")
    assert _touches("class S:\n    def __init__(self, stem):\n        self.clone = RunHome(stem).on_host / CLONE\n"
                    "    def read(self):\n        return Repository(self.clone)\n") == [
        "a run's path passed to Repository()"]
    assert _touches("def f(caller):\n    return caller.run_clone.is_file()\n") == [".is_file() on a run's path"]
    assert _touches("def f(home):\n    return Meanwhile(lambda: (home.on_host / CLONE).unlink())\n") == [
        ".unlink() on a run's path"]  # run later, in a thread of its own (prepare.py)


def test_the_guard_lets_the_bounded_module_and_descriptions_through():
    assert not _touches("from ..unit import bounded\ndef f(home):\n"
                        "    return bounded.read_last_line(home.on_host / LAST_LINE)\n")
    assert not _touches("from ..unit.bounded import remove_tree\ndef f(home):\n    remove_tree(home.on_host)\n")
    assert not _touches("def f(home, page):\n    return TransientService(name='x', argv=['p', str(home.inside)],\n"
                        "        bind_paths=[BindPath(str(copy_path(home.on_host, 0)), '/h')])\n")
    assert not _touches("def f(home, config):\n    return config.state_dir.read_text()\n")

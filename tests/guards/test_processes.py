"""One package per process (architecture.md): a line's path says which process runs it, as whom,
and what it may touch. Fails when one process's package imports another's but at an entry
listed below, when the shared layer imports a process's package, when what runs inside a run
imports more than the standard library and the protocol, or when a process's package does not
say, in its first lines, who runs it."""
from __future__ import annotations

import ast
import sys

from . import boundary, scan

FILES = [path for path in scan.tracked_python_files() if path.startswith("ocx/")]
INSIDE_RUN = "inside_run"
# The two shared modules what runs inside a run may import besides: each standard library only
# (checked below), one list of names the unit and the feeder agree on, one way to wait on inotify.
INSIDE_MAY_IMPORT = {"ocx.node.host_paths", "ocx.node.inotify"}
# (importing process, imported module): why. Nothing else of another process is imported.
CROSSINGS = {
    ("cli", "ocx.node_service.serve"): "`ocx node serve NAME`, which ocx-node@ runs: the command becomes the service",
    ("cli", "ocx.node_service.check"): "`ocx node check NAME`, which ocx-check@ runs (D6)",
    ("cli", "ocx.follower.follow"): "`ocx node follow NAME`, which ocx-follow@ runs (D38)",
    ("cli", "ocx.setup.init"): "`ocx node init NAME`",
    ("cli", "ocx.setup.elsewhere"): "`ocx node init --name NAME --server URL` (D36)",
    ("cli", "ocx.setup.demo"): "`ocx demo`",
    ("cli", "ocx.setup.leave"): "`ocx node remove NAME --at-node SRV` (D36)",
    ("cli", "ocx.setup.account"): "`ocx release stage`: the build's own unprivileged account (D48)",
    ("cli", "ocx.hook.after_receive"): "`ocx hook REPOSITORY`, which Fossil runs after each receipt (D5)",
    ("node_service", "ocx.run_steps.prepare"): "a run without network is prepared by the node itself, in its "
                                               "process (D34); the step's command line is Preparation's argv",
    ("node_service", "ocx.run_steps.cpu_watch"): "the node arms the timer whose service the cpu watch is (D17)",
}
SAYS = ("Run by:", "As:", "Reads:", "Writes:")


def package_of(path: str) -> str | None:
    parts = path.split("/")
    return parts[1] if len(parts) > 2 else None


def imports_in(path: str, source: str) -> set[str]:
    """The OCX modules SOURCE (the text of PATH) imports: `from X import y` is X.y where y is a
    module, else X."""
    package = path[:-3].replace("/", ".").removesuffix(".__init__")
    parts = package.split(".") if path.endswith("__init__.py") else package.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if boundary.module_file(f"{base}.{alias.name}") else base)
    return found


def crossings(path: str, source: str) -> list[str]:
    """Each import of PATH into a process's package that is not its own, nor listed in CROSSINGS."""
    own = package_of(path)
    offenders = []
    for module in sorted(imports_in(path, source)):
        parts = module.split(".")
        if parts[0] != "ocx" or len(parts) < 2 or parts[1] not in scan.PROCESSES or parts[1] == own:
            continue
        if own in scan.PROCESSES and (own, module) in CROSSINGS:
            continue
        offenders.append(f"{path} imports {module}")
    return offenders


def beyond_the_standard_library(path: str, source: str, allowed: set[str]) -> list[str]:
    """Each module PATH imports that is neither the standard library's, nor ocx.protocol, nor in ALLOWED,
    nor of PATH's own package."""
    offenders = []
    for module in sorted(imports_in(path, source)):
        parts = module.split(".")
        if parts[0] == "ocx":
            if parts[1:2] in (["protocol"], [package_of(path)]) or module in allowed:
                continue
        elif parts[0] in sys.stdlib_module_names:
            continue
        offenders.append(f"{path} imports {module}")
    return offenders


def source(path: str) -> str:
    return (scan.ROOT / path).read_text()


def test_every_package_is_a_process_or_shared():
    packages = {package_of(path) for path in FILES} - {None}
    assert packages == (scan.PROCESSES | scan.SHARED) - {"files"}, packages ^ ((scan.PROCESSES | scan.SHARED) - {"files"})


def test_no_process_imports_another_but_the_entries_it_starts():
    offenders = [offence for path in FILES for offence in crossings(path, source(path))]
    assert not offenders, offenders


def test_every_listed_crossing_is_still_taken():
    taken = {(package_of(path), module) for path in FILES for module in imports_in(path, source(path))}
    assert set(CROSSINGS) <= taken, f"drop these from CROSSINGS: {sorted(set(CROSSINGS) - taken)}"
    assert all(why for why in CROSSINGS.values())


def test_what_runs_inside_a_run_imports_only_the_standard_library_and_the_protocol():
    inside = [path for path in FILES if package_of(path) == INSIDE_RUN]
    assert "ocx/inside_run/feeder.py" in inside and "ocx/inside_run/relay.py" in inside
    offenders = [o for path in inside for o in beyond_the_standard_library(path, source(path), INSIDE_MAY_IMPORT)]
    for module in INSIDE_MAY_IMPORT:
        path = boundary.module_file(module)
        assert path is not None, module
        offenders += beyond_the_standard_library(path, source(path), set())
    assert not offenders, offenders


def test_each_process_says_who_runs_it_as_whom_and_what_it_touches():
    for process in sorted(scan.PROCESSES):
        path = f"ocx/{process}/__init__.py"
        doc = ast.get_docstring(ast.parse(source(path))) or ""
        lines = [line.strip() for line in doc.splitlines()]
        missing = [say for say in SAYS if not any(line.startswith(say) for line in lines)]
        assert not missing, f"{path}'s docstring lacks {missing}"


# The detectors, on snippets.

def test_the_guard_catches_a_process_importing_another():
    assert crossings("ocx/page/x.py", "from ..node_service import intake\n") == [
        "ocx/page/x.py imports ocx.node_service.intake"]
    assert crossings("ocx/node/x.py", "from ..page.web import main\n") == ["ocx/node/x.py imports ocx.page.web"]
    assert crossings("ocx/cli/x.py", "from ..node_service.intake import one_pass\n") == [
        "ocx/cli/x.py imports ocx.node_service.intake"]
    assert crossings("ocx/tools/x.py", "import ocx.run_steps.prepare\n") == ["ocx/tools/x.py imports ocx.run_steps.prepare"]


def test_the_guard_lets_a_listed_entry_and_the_shared_layer_through():
    assert not crossings("ocx/cli/x.py", "from ..node_service.serve import serve_forever\n")
    assert not crossings("ocx/page/x.py", "from ..node import config\nfrom ..tools.caller import Caller\n")
    assert not crossings("ocx/page/console/x.py", "from .. import web_viewer\n")


def test_the_guard_catches_what_a_run_may_not_import():
    path = "ocx/inside_run/x.py"
    assert not beyond_the_standard_library(path, "import json, os\nfrom ..protocol.errors import OcxError\n"
                                                 "from ..node.host_paths import KEEP_ENVIRONMENT\n", INSIDE_MAY_IMPORT)
    assert beyond_the_standard_library(path, "import pydantic\nfrom ..node.config import load\n", INSIDE_MAY_IMPORT) == [
        f"{path} imports ocx.node.config", f"{path} imports pydantic"]

"""D41's rule, read from the source: root's code touches what a run can write
only through ocx/node/bounded.py.

Root's code is ocx/node_service, ocx/run_steps and the tool service
(ocx/tool_service), the shared modules root's processes brought with them
when the packages were cut by process (ROOT_SIDE), with every module of OCX
they import. A run can
write its home (RunHome.on_host and .inside, the same directory seen from
the host and from the run), its runtime directory (.terminal_socket), the
copies of its runner's homes (copy_path), its clone (a tool caller's
.run_clone) and what it leaves in them under the names the node gives them
(LAST_LINE, CLONE, …). The check follows such a path through each
function: joining, naming and describing it are free (a unit's BindPath, a
Preparation); any other use (a method such as `.read_text()` or `.exists()`,
or passing it to `open`, `shutil`, `Repository`…) must be a call of the
bounded module, or one of the few uses listed in ALLOWED with its reason.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from . import scan

ROOT_SIDE = ("ocx/node_service/", "ocx/run_steps/", "ocx/tool_service/",
             # shared, or the command line's, and held as root's wherever they run:
             "ocx/node/activity.py", "ocx/node/admit.py", "ocx/node/arrivals.py", "ocx/node/runner_pages.py",
             "ocx/node/socket_served.py", "ocx/node/bounded.py", "ocx/node/runner_homes.py", "ocx/cli/attaching.py")
IN_RUN = ("ocx/inside_run/", "ocx/node/inside/")  # the second: the relay's old path (ocx/node/inside/relay.py)
BOUNDED = "ocx.node.bounded"

SOURCE_ATTRIBUTES = {"on_host", "inside", "terminal_socket", "run_clone"}
SOURCE_CALLS = {"copy_path"}
SOURCE_NAMES = {"LAST_LINE", "COPIES", "CLONE", "CHECKOUT", "PASSWORD_FILE"}
# A module's own names for a run's home, where a field name alone says it.
FILE_SOURCE_ATTRIBUTES = {"ocx/run_steps/prepare.py": {"home"}}

# Calls that build a path or a description from one, and touch nothing.
PROPAGATE = {"str", "Path", "fspath", "join", "joinpath", "with_name", "with_suffix", "relative_to", "as_posix",
             "removesuffix", "removeprefix"}
# Calls that take one and touch nothing: they describe a unit to systemd, or name it in a message.
DESCRIBE = {"BindPath", "ExecCommand", "TransientService", "environment", "Preparation", "python_module",
            "preparation", "log", "FieldError", "NoTerminal", "Refused", "Session", "Caller", "RunSocket"}

# (file, function) -> {callee: why}: the uses that are neither bounded nor descriptions.
ALLOWED: dict[tuple[str, str], dict[str, str]] = {
    ("ocx/run_steps/prepare.py", "make_home"): dict.fromkeys(
        ["exists", "mkdir", "chmod", "copy_bytes", "_own", "placed", "_made_own", "_moved_to_checkin",
         "_given", "pull_as", "open_checkout", "copy_in", "stat", "_give"],
        "makes the home before the run exists (its user, its unit's processes); what an earlier attempt "
        "left there is removed first through bounded.empty_directory"),
    ("ocx/run_steps/prepare.py", "_moved_to_checkin"): dict.fromkeys(
        ["copy_changed", "stat", "_own", "update_checkout", "_given"],
        "makes the home before the run exists, from what the node placed there (spare.placed checked it; "
        "copy_changed opens no link, writes only a regular file, reads no more of it than the template's size)"),
    ("ocx/node_service/checkin_runs.py", "place_ahead"): dict.fromkeys(
        ["take"], "spare.take is checked on its own"),
    ("ocx/run_steps/prepare.py", "_fossil_meanwhile"): dict.fromkeys(
        ["CallerClone"], "Fossil's checkout or update of the home before the run exists, for make_home and "
        "_moved_to_checkin"),
    ("ocx/run_steps/prepare.py", "_made_own"): dict.fromkeys(
        ["_own"], "makes the home before the run exists, as make_home does"),
    ("ocx/run_steps/prepare.py", "_own"): dict.fromkeys(
        ["make_own", "open", "fdopen"], "makes the home before the run exists, as make_home does"),
    ("ocx/node/spare.py", "make"): dict.fromkeys(
        ["copy_with_checkout"], "the node's own spares directory in its state: CLONE and CHECKOUT only name "
        "the layout a run's home will have"),
    ("ocx/node/spare.py", "take"): dict.fromkeys(
        ["_placed_from"], "makes a run's home before its unit exists, only where none is (os.path.lexists): "
        "nothing of a run's is there"),
    ("ocx/node/spare.py", "_placed_from"): dict.fromkeys(
        ["rename", "mkdir", "_remove"], "makes a run's home before its unit exists, only where none is "
        "(spare.take checked os.path.lexists): nothing of a run's is there; a rename follows no link"),
    ("ocx/node/spare.py", "placed"): dict.fromkeys(
        ["listdir", "lstat"], "reads names and the two entries' own types (lstat: no link followed), in a home "
        "the node made before the unit existed"),
    ("ocx/node_service/start_stop.py", "start_session"): dict.fromkeys(
        ["take_spare"], "take_spare is checked on its own"),
    ("ocx/node_service/start_stop.py", "take_spare"): dict.fromkeys(
        ["take"], "spare.take is checked on its own"),
    ("ocx/run_steps/prepare.py", "prepare_run"): dict.fromkeys(
        ["make_home"], "make_home is checked on its own"),
    ("ocx/node/runner_homes.py", "copy_in"): dict.fromkeys(
        ["mkdir", "copytree"], "copies the host's home in before the run starts, after bounded.remove_tree "
        "removed what an attempt left"),
    ("ocx/node/runner_homes.py", "copy_back"): dict.fromkeys(
        ["_write_back"], "_write_back reads the copy only through bounded.directory and read_at"),
    ("ocx/cli/attaching.py", "connect"): dict.fromkeys(
        ["connect"], "connects to the run's terminal socket, then closes at once unless SO_PEERCRED says the "
        "other end is the session's own unit (D41: a link there leads nowhere)"),
    ("ocx/cli/attach.py", "attach_session"): dict.fromkeys(
        ["connect"], "attaching.connect checks the peer"),
    ("ocx/tools/push.py", "_plan"): dict.fromkeys(
        ["RunClone"], "ocx/fossil/run_clone.py opens the run's clone without following a link, only as a regular "
        "file of the run's own with one name, immutable, every read bounded in size and time (C6, D22, D41)"),
}


def module_file(module: str) -> str | None:
    base = scan.ROOT / module.replace(".", "/")
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return str(candidate.relative_to(scan.ROOT))
    return None


def imports_of(path: str) -> set[str]:
    """Every OCX module PATH imports, anywhere in it, submodules named in `from X import y` included."""
    package = path[:-3].replace("/", ".").removesuffix(".__init__")
    parts = package.split(".") if path.endswith("__init__.py") else package.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse((scan.ROOT / path).read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in found if name.startswith("ocx")}


def root_side_files(files: list[str]) -> set[str]:
    """The root side's own files and every OCX file they import, transitively."""
    todo = [f for f in files if f.startswith(ROOT_SIDE)]
    seen: set[str] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for module in imports_of(path):
            target = module_file(module)
            if target is not None and target not in seen:
                todo.append(target)
    return seen


@dataclass(frozen=True)
class Touch:
    path: str
    function: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line} in {self.function}: {self.what}"


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _is_bounded(call: ast.Call, bounded_names: set[str]) -> bool:
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "bounded":
        return True
    return isinstance(func, ast.Name) and func.id in bounded_names


class _Function:
    """The taint of run paths through one function's body, in order."""

    def __init__(self, path: str, name: str, sources: set[str], tainted_fields: set[str], bounded_names: set[str]):
        self.path, self.name, self.sources = path, name, sources
        self.tainted_fields, self.bounded_names = tainted_fields, bounded_names
        self.tainted: set[str] = set()
        self.touches: list[Touch] = []
        self.allowed = ALLOWED.get((path, name), {})

    def taint(self, node: ast.AST | None) -> bool:
        """Whether NODE's value is (or is built from) a run path; records touches on the way."""
        if node is None:
            return False
        if isinstance(node, ast.Name):
            return node.id in self.tainted or node.id in SOURCE_NAMES
        if isinstance(node, ast.Attribute):
            inner = self.taint(node.value)
            return inner or node.attr in self.sources or (
                node.attr in self.tainted_fields and isinstance(node.value, ast.Name) and node.value.id == "self")
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Lambda):  # a function, not a path; what it touches when called is touched here
            self.taint(node.body)
            return False
        children = [self.taint(child) for child in ast.iter_child_nodes(node) if isinstance(child, ast.expr)]
        if isinstance(node, ast.Compare):
            return False  # a comparison's value is a truth, not a path
        return any(children)

    def call(self, call: ast.Call) -> bool:
        name = _callee(call)
        receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
        on_run_path = receiver is not None and self.taint(receiver)
        arguments = [self.taint(a) for a in call.args] + [self.taint(k.value) for k in call.keywords]
        if _is_bounded(call, self.bounded_names):
            return False  # the one way in (D41); what it returns is data or a descriptor, not a path
        if name in SOURCE_CALLS:
            return True
        if not (on_run_path or any(arguments)):
            return False
        if name in PROPAGATE:
            return True
        if name in DESCRIBE or name in self.allowed:
            return False
        what = f".{name}() on a run's path" if on_run_path else f"a run's path passed to {name or 'a call'}()"
        self.touches.append(Touch(self.path, self.name, call.lineno, what))
        return False

    def statement(self, statement: ast.stmt) -> None:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return  # checked on their own
        if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if self.taint(statement.value):
                for target in targets:
                    self.mark(target)
            return
        if isinstance(statement, (ast.For, ast.AsyncFor)):
            if self.taint(statement.iter):
                self.mark(statement.target)
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            for item in statement.items:
                if self.taint(item.context_expr) and item.optional_vars is not None:
                    self.mark(item.optional_vars)
        for field in ("test", "value", "exc", "msg"):
            child = getattr(statement, field, None)
            if isinstance(child, ast.expr):
                self.taint(child)
        for block in ("body", "orelse", "finalbody", "handlers"):
            for child in getattr(statement, block, []):
                if isinstance(child, ast.ExceptHandler):
                    for inner in child.body:
                        self.statement(inner)
                else:
                    self.statement(child)

    def mark(self, target: ast.AST) -> None:
        if isinstance(target, ast.Name):
            self.tainted.add(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self.mark(element)
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
            self.tainted_fields = self.tainted_fields | {target.attr}


def touches_in(path: str, source: str) -> list[Touch]:
    """Every use of a run's path in SOURCE (the text of PATH) that is neither
    bounded, nor a description, nor ALLOWED."""
    tree = ast.parse(source)
    sources = SOURCE_ATTRIBUTES | FILE_SOURCE_ATTRIBUTES.get(path, set())
    bounded_names = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                     and (node.module or "").endswith("bounded") for alias in node.names}
    # self.FIELD = <a run path> anywhere in the module makes self.FIELD one everywhere in it.
    fields: set[str] = set()
    for _ in range(2):
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                probe = _Function(path, node.name, sources, fields, bounded_names)
                for statement in node.body:
                    if isinstance(statement, ast.Assign) and probe.taint(statement.value):
                        fields |= {t.attr for t in statement.targets if isinstance(t, ast.Attribute)
                                   and isinstance(t.value, ast.Name) and t.value.id == "self"}
    touches: list[Touch] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = _Function(path, node.name, sources, fields, bounded_names)
            for statement in node.body:
                function.statement(statement)
            touches += function.touches
    return touches

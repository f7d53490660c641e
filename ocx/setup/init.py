"""`ocx node init NAME`: a node from nothing, on a host whose PID 1 is systemd.

One command, as root: the Fossil server's own account (D27), a NEW
repository with an admin login (never a copy: two copies would share a
server-code, C1) or an adopted one, the node user (D20), Fossil's
after-receive hook (D5), the configuration (/etc/ocx/NAME.json), and the
units of units/ installed, enabled and started (D6, D26, D27).

Every step first looks at what is there and changes only what differs, so
running it twice changes nothing: no user row, setting, file or unit is
written again (docs/operating.md).
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..files import write_atomically
from ..fossil import admin
from ..fossil.errors import FOSSIL_FAILURES, UnknownUser
from ..fossil.program import run_fossil
from ..fossil.repository import Repository
from ..node import config as node_config
from ..node.config import CONFIG_DIR, NodeConfig
from ..node.host_paths import RELEASES_DIRECTORY, page_secret_path, page_socket_path
from ..node.releases.serving import LAUNCHER, door_command, launcher_text
from ..node.serving.registry import NODE_USER_CAPABILITIES
from ..protocol.errors import OcxError
from . import account as accounts
from . import git_door, unit_install
from .unit_install import port_of

DEFAULT_PORT = 8080
DEFAULT_ADMIN = "admin"
REPOSITORY_ROOT = Path("/var/lib/ocx-fossil")  # the server account's home, and its repositories
BACKOFFICE_LOG_DIR = Path("/var/log/ocx-fossil")  # LogsDirectory= of ocx-fossil@.service


class InitError(OcxError, RuntimeError):
    """Why init stopped; nothing it did before is undone, and a rerun goes on."""


@dataclass
class Step:
    what: str
    changed: bool
    detail: str = ""


@dataclass
class InitReport:
    config: NodeConfig
    admin_login: str | None = None
    admin_password_file: Path | None = None
    steps: list[Step] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(step.changed for step in self.steps)

    def add(self, what: str, changed: bool, detail: str = "") -> None:
        self.steps.append(Step(what, changed, detail))


@dataclass(frozen=True)
class InitOptions:
    name: str
    port: int | None = None  # a new node: DEFAULT_PORT; an existing one keeps its own
    repository: str | None = None  # adopt this file instead of making a new one
    server_account: str = "fossil"
    node_user: str = "ocx-node"
    admin_login: str = DEFAULT_ADMIN
    python: str = "/opt/ocx/venv/bin/python"
    units_dir: Path = unit_install.SOURCE_UNITS
    public: bool | None = None  # listen on every address (nodes elsewhere reach it, D36); None: as it was


def admin_password_file(name: str) -> Path:
    return CONFIG_DIR / f"{name}.admin-password"


def hook_command() -> str:
    """What Fossil's backoffice runs (`/bin/sh -c`); %R is the repository (fossil-facts.md). Through
    the launcher: the release `current` names, else the installation's python (releases/serving.py)."""
    return f"{LAUNCHER} -m ocx.cli.launch hook %R"


HOOK_TAIL = " -m ocx.cli.launch hook %R"  # an OCX hook, whichever python an earlier init named


def pid1_is_systemd() -> bool:
    try:
        return Path("/proc/1/comm").read_text().strip() == "systemd"
    except OSError:
        return False


def _existing(name: str) -> NodeConfig | None:
    path = node_config.config_path(name)
    return node_config.load(name) if path.exists() else None


def refuse_reserved(name: str) -> None:
    """A node's state is STATE_ROOT/NAME: a node named for the releases' root would hold it (D45, D48)."""
    if name == os.path.basename(RELEASES_DIRECTORY):
        raise InitError(f"name: {name!r} is the releases' root ({RELEASES_DIRECTORY}), where a node of that name "
                        "would keep its state: choose another name")


def plan(options: InitOptions) -> NodeConfig:
    """The configuration this init makes, or the one a previous init made.
    A rerun that asks for something else is refused rather than half-applied."""
    refuse_reserved(options.name)
    existing = _existing(options.name)
    if existing is not None:
        wanted = {"repository": options.repository and str(Path(options.repository).resolve()),
                  "port": options.port, "server_account": options.server_account,
                  "node_user": options.node_user}
        have = {"repository": existing.repository, "port": port_of(existing.url),
                "server_account": existing.server_account, "node_user": existing.node_user}
        clash = [k for k, v in wanted.items() if v is not None and v != have[k]]
        if clash:
            raise InitError(f"node {options.name} exists with " + ", ".join(
                f"{k}={have[k]!r} (asked {wanted[k]!r})" for k in clash)
                + f"; edit or remove {node_config.config_path(options.name)} first")
        if existing.elsewhere:
            raise InitError(f"node {options.name} is a node elsewhere (D36): give --server {existing.url}")
        if options.public is not None and options.public != existing.public:
            return existing.model_copy(update={"public": options.public})  # its server's drop-in follows
        return existing
    repository = (str(Path(options.repository).resolve()) if options.repository
                  else str(REPOSITORY_ROOT / f"{options.name}.fossil"))
    return NodeConfig(name=options.name, repository=repository,
                      url=f"http://127.0.0.1:{options.port or DEFAULT_PORT}",
                      node_user=options.node_user, server_account=options.server_account,
                      python=options.python, public=bool(options.public))


def init_node(options: InitOptions) -> InitReport:
    """The whole of `ocx node init`: the repository's side, then systemd's."""
    if os.geteuid() != 0:
        raise InitError("ocx node init must run as root")
    if not pid1_is_systemd():
        raise InitError("PID 1 is not systemd here: run `ocx demo` through contrib/demo.sh, "
                        "which starts a systemd container (docs/operating.md)")
    config = plan(options)
    report = InitReport(config)
    home = config.state_dir / "home"  # HOME of root's own `fossil` runs (NodeContext.fossil_home)
    home.mkdir(parents=True, exist_ok=True)
    _private_state(config, report)
    server, made = accounts.ensure(config.server_account, str(REPOSITORY_ROOT))
    report.add(f"Unix account {server.name} (uid {server.uid}) for the Fossil server", made)
    _repository(options, config, server, home, report)
    _settings(config, home, report)
    password = _node_user(config, home, report)
    _hook(config, home, report)
    _config(config, password, report)
    _web_page(config, report)
    git_door.install(config, home, report)
    _page_secret(config, server, report)
    write_launcher(config, report)
    changed, started = unit_install.install_and_start(config, server.home, options.units_dir)
    for unit, was_written in changed.items():
        report.add(f"unit file {unit}" + ("" if "@." in unit or unit == "ocx.slice" else " drop-in"), was_written)
    for unit, state, was_started in started:
        report.add(f"{unit} {state}".strip(), was_started)
    make_runs_clone(config, report)
    return report


def make_runs_clone(config: NodeConfig, report: InitReport) -> None:
    """The node's clone for runs (node/template.py), made now, while nobody
    else clones: two clones of a large repository at once can both fail."""
    from ..node import template

    existed = template.template_path(config).exists()
    try:
        template.current(config, -1)
    except FOSSIL_FAILURES as error:  # the server not up yet, say: the first run makes it
        report.add(f"the node's clone for runs: not made yet ({error})", False)
        return
    if existed:  # made before runs' clones were planned as they are made (copies.make_template)
        admin.plan_pull_answers(template.template_path(config), home=config.state_dir / "home")
    report.add(f"the node's clone for runs {template.template_path(config)}", not existed)


def _repository(options: InitOptions, config: NodeConfig, server: accounts.Account,
                home: Path, report: InitReport) -> None:
    path = Path(config.repository)
    secret = admin_password_file(config.name)
    if not path.exists():
        if options.repository is not None:
            raise InitError(f"no repository file at {path} to adopt")
        _owned_directory(path.parent, server)
        # A NEW repository: its own server-code, never a copy of another (C1).
        password = admin.new_repository(path, options.admin_login, home=home)
        _write_secret(secret, password)
        report.add(f"new repository {path} with setup user {options.admin_login}", True)
    else:
        report.add(f"repository {path}" + ("" if secret.exists() else " (adopted)"), False)
    with Repository(path) as repository:
        if not repository.server_code:  # D29: the server-code names the node
            raise InitError(f"{path} has no server-code: not a Fossil repository")
        if secret.exists():
            # `fossil new --admin-user` made it the first user, with setup.
            report.admin_login = repository.users()[0].login
            report.admin_password_file = secret
    _owned_by(path, server, report)


def _private_state(config: NodeConfig, report: InitReport) -> None:
    """The node's state is root's alone (docs/security.md, 'Class 5'): its clone holds the
    node user's sync secret, which Fossil takes as that login; the records
    hold the runs' tool sockets, which only each run reaches, by its bind."""
    info = config.state_dir.stat()
    changed = (info.st_uid, info.st_mode & 0o777) != (0, 0o700)
    if changed:
        os.chown(config.state_dir, 0, 0)
        os.chmod(config.state_dir, 0o700)
    clone = config.state_dir / "node-clone.fossil"
    if clone.exists() and clone.stat().st_mode & 0o077:
        os.chmod(clone, 0o600)
        changed = True
    report.add(f"node state {config.state_dir} root's only (0700)", changed)


def _owned_directory(directory: Path, server: accounts.Account) -> None:
    # Fossil writes its rollback journal beside the file: the server's
    # account must own the directory too (fossil-facts.md).
    directory.mkdir(parents=True, exist_ok=True)
    if directory.stat().st_uid != server.uid:
        os.chown(directory, server.uid, server.gid)
    os.chmod(directory, 0o750)


def _owned_by(path: Path, server: accounts.Account, report: InitReport) -> None:
    """The hook runs as the file's owner (D27): that is the server's account."""
    directory = path.parent.stat()
    if directory.st_uid != server.uid:
        raise InitError(f"{path.parent} is not owned by {server.name}: the Fossil server writes its "
                        f"journal there; move the repository into a directory of its own")
    info = path.stat()
    if (info.st_uid, info.st_gid, info.st_mode & 0o777) != (server.uid, server.gid, 0o640):
        os.chown(path, server.uid, server.gid)
        os.chmod(path, 0o640)
        report.add(f"{path} owned by {server.name}, mode 0640", True)


def _settings(config: NodeConfig, home: Path, report: InitReport) -> None:
    log = str(BACKOFFICE_LOG_DIR / f"{config.name}-backoffice.log")
    with Repository(config.repository) as repository:
        current = repository.config("backoffice-logfile")
    if current != log:
        admin.set_setting(config.repository, "backoffice-logfile", log, home=home)
    report.add(f"setting backoffice-logfile = {log}", current != log)
    report.add("statistics for the server's answers to pulls (ANALYZE unclustered)",
               admin.plan_pull_answers(config.repository, home=home))


def _node_user(config: NodeConfig, home: Path, report: InitReport) -> str | None:
    """D20's login; returns a new password to keep, or None when the kept one stands."""
    login, repo = config.node_user, config.repository
    with Repository(repo) as repository:
        try:
            letters = repository.user(login).capabilities
        except UnknownUser:
            letters = None
    if letters is None:
        password = admin.create_user(repo, login, NODE_USER_CAPABILITIES, "OCX node user (D20)", home=home)
        report.add(f"node user {login} with letters {NODE_USER_CAPABILITIES}", True)
        return password
    if sorted(letters) != sorted(NODE_USER_CAPABILITIES):
        admin.set_capabilities(repo, login, NODE_USER_CAPABILITIES, home=home)
    report.add(f"node user {login} with letters {NODE_USER_CAPABILITIES}",
               sorted(letters) != sorted(NODE_USER_CAPABILITIES))
    if not config.password_file.exists():
        report.add(f"new password for {login} (its file was missing)", True)
        return admin.set_random_password(repo, login, home=home)
    return None


def _hook(config: NodeConfig, home: Path, report: InitReport) -> None:
    command = hook_command()
    with Repository(config.repository) as repository:
        try:
            hooks = json.loads(repository.config("hooks") or "[]")
        except ValueError:
            hooks = []
    present = any(h.get("cmd") == command and h.get("type") == "after-receive" for h in hooks)
    # An earlier init's hook naming the installation's python: moved to the launcher, not doubled.
    older = [str(at) for at, h in enumerate(hooks) if h.get("type") == "after-receive"
             and str(h.get("cmd", "")).endswith(HOOK_TAIL) and h.get("cmd") != command]
    if older and not present:
        run_fossil(["hook", "edit", "--command", command, older[0], "-R", config.repository], home=home)
    elif not present:
        run_fossil(["hook", "add", "--command", command, "--type", "after-receive",
                    "--sequence", "1", "-R", config.repository], home=home)
    if not present:  # before the server starts: its first backoffice then has no backlog to describe
        admin.start_hooks_from_now(config.repository, home=home)
    report.add(f"after-receive hook: {command}", not present)


def write_launcher(config: NodeConfig, report: InitReport) -> None:
    """The one path the node's units, hook and ext programs run OCX's python by: the release `current`
    names, else this installation's (ocx/node/releases/serving.py). Root's, 0755."""
    import ocx  # its doors are scripts the launcher runs by their path

    text = launcher_text(config.python, str(Path(ocx.__file__).resolve().parent))
    path = Path(LAUNCHER)
    changed = not path.exists() or path.read_text() != text
    if changed:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, text, 0o755)
    if changed or path.stat().st_mode & 0o777 != 0o755:
        os.chmod(path, 0o755)
    report.add(f"OCX's python for the units {path} (the release current names, else {config.python})", changed)


def _config(config: NodeConfig, password: str | None, report: InitReport) -> None:
    path = node_config.config_path(config.name)
    before = path.read_text() if path.exists() else None
    after = json.dumps(config.model_dump(), indent=2) + "\n"  # as config.save writes it
    if before != after or password is not None:
        node_config.save(config, password)
    if password is not None:
        os.chmod(config.password_file, 0o600)
    report.add(f"configuration {path}", before != after)
    report.add(f"node user's password in {config.password_file} (0600)", password is not None)


def web_page_program(config_file: Path | str, name: str) -> str:
    """The ext program the Fossil server runs for /ext/ocx (D30), as its own
    account: the page's door (ocx/page/page_door.py), a standard-library
    script that starts quickly and hands the request to the page service
    (ocx-page@NAME), or runs the page itself (`PYTHON -m ocx.page.web
    CONFIG`) when the service cannot be reached. Fossil clears its
    environment, so it names the node's configuration and the socket. The
    launcher runs the door of the release `current` names (releases/serving.py)."""
    return f"#!/bin/sh\nexec {door_command('page_door')} {config_file} {page_socket_path(name)}\n"


def _web_page(config: NodeConfig, report: InitReport) -> None:
    # Root's, 0755: the server's account runs them and cannot change them. /ext/ocx-next runs root's
    # copy of the staged release's page as a preview (node/releases/preview.py, D46).
    from ..node.releases.preview import PROGRAM, preview_program

    config_file = node_config.config_path(config.name)
    for name, text, what in (("ocx", web_page_program(config_file, config.name), "/ext/ocx, D30"),
                             (PROGRAM, preview_program(str(config_file)), "/ext/ocx-next, D46")):
        program = config.extroot / name
        changed = not program.exists() or program.read_text() != text
        if changed:
            config.extroot.mkdir(parents=True, exist_ok=True)
            os.chmod(config.extroot, 0o755)
            os.chmod(config.extroot.parent, 0o755)
            program.write_text(text)
        if changed or program.stat().st_mode & 0o777 != 0o755:
            os.chmod(program, 0o755)
        report.add(f"web page {program} ({what})", changed)


def _page_secret(config: NodeConfig, server: accounts.Account, report: InitReport) -> None:
    """D43: the secret the page signs its forms' tokens with, readable by root
    and the server's account (which runs the page) only, never by a run."""
    path = page_secret_path(node_config.config_path(config.name))
    made = not path.exists()
    if made:
        _write_secret(path, secrets.token_hex(32))
    info = path.stat()
    if (info.st_uid, info.st_gid, info.st_mode & 0o777) != (0, server.gid, 0o640):
        os.chown(path, 0, server.gid)
        os.chmod(path, 0o640)
        made = True
    report.add(f"web page's secret {path} (0640, group {server.name}, D43)", made)


def _write_secret(path: Path, secret: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(secret + "\n")


def copy_if_changed(source: Path, target: Path) -> bool:
    if target.exists() and target.read_bytes() == source.read_bytes():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    os.chmod(target, 0o644)
    return True

"""`ocx node init --name NAME --server URL`: a node elsewhere (D36), on a
host whose PID 1 is systemd.

One command, as root. An admin's login on the server, given once (a
password file, or asked on the terminal: never on the command line), or a
join token an admin made for NAME on the server's page (a file, stdin or
the terminal: never the command line or the environment; good once, for an
hour, page/join_tokens.py) lets it register the node with the server's
node: its own node user (default
`ocx-node-NAME`), holding only what its writes need (D37), whose random
password is kept in /etc/ocx/NAME.node-password (0600); then its clone of
the served repository over HTTP as that user, whose new server-code names
the node in records (C1), registered in turn; its clone for runs
(node/template.py); the node's mark at the server's newest receipt (no
record can name a server-code older than itself); the configuration; and
its units (socket, tool sockets, follower), enabled and started. Run again, it asks for nothing it has:
with its password file and its registration in place, no admin is needed.
"""
from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..files import write_atomically
from ..fossil.repository import Repository
from ..fossil.sync import CallerClone
from ..node import config as node_config
from ..node.config import STATE_ROOT, NodeConfig
from ..node.server_link import ServerLink, ServerRefused, Unreachable, WebError, join_answer, session_file
from ..protocol.admission import ENFORCED_RESTRICTIONS
from . import unit_install
from .init import InitError, InitReport, make_runs_clone, pid1_is_systemd, refuse_reserved, write_launcher

CLONE = "node-clone.fossil"  # the node's repository, and its node user's clone for `ci` tags (context.node_clone)


@dataclass(frozen=True)
class ElsewhereOptions:
    name: str
    server: str  # the server's base URL, as this host reaches it
    admin_password: Callable[[], str]  # asked only when needed: the node user is new or its password lost
    join_token: Callable[[], str] | None = None  # instead of an admin's login: a token an admin made on the page
    admin_login: str = "admin"
    node_user: str | None = None  # default ocx-node-NAME
    replace: bool = False  # an admin's word: take NAME over from the node registered under it (D31)
    python: str = "/opt/ocx/venv/bin/python"
    units_dir: Path = unit_install.SOURCE_UNITS


def plan(options: ElsewhereOptions) -> NodeConfig:
    refuse_reserved(options.name)
    url = options.server.rstrip("/")
    login = options.node_user or f"ocx-node-{options.name}"
    path = node_config.config_path(options.name)
    if path.exists():
        existing = node_config.load(options.name)
        if not existing.elsewhere or existing.url != url or existing.node_user != login:
            raise InitError(f"node {options.name} exists here ({existing.url}, node user {existing.node_user}); "
                            f"edit or remove {path} first")
        return existing
    return NodeConfig(name=options.name, repository=str(STATE_ROOT / options.name / CLONE), url=url,
                      node_user=login, server_account="root", python=options.python, elsewhere=True)


def init_elsewhere(options: ElsewhereOptions) -> InitReport:
    if os.geteuid() != 0:
        raise InitError("ocx node init must run as root")
    if not pid1_is_systemd():
        raise InitError("PID 1 is not systemd here: a node runs its runs as systemd units (D1)")
    config = plan(options)
    report = InitReport(config)
    config_existed = node_config.config_path(config.name).exists()  # saved early with its password: say "created"
    fresh = not config.state_dir.exists()
    home = config.state_dir / "home"
    home.mkdir(parents=True, exist_ok=True)
    os.chown(config.state_dir, 0, 0)
    os.chmod(config.state_dir, 0o700)  # its clone and records are root's alone (docs/security.md, 'Class 5')
    try:
        _register_and_clone(options, config, home, report, config_existed)
    except (ServerRefused, Unreachable, WebError, InitError) as error:
        if fresh and not config.password_file.exists():  # refused before anything was registered: leave nothing
            shutil.rmtree(config.state_dir, ignore_errors=True)
        if isinstance(error, InitError):
            raise
        raise InitError(f"the server at {config.url} said: {error}") from None
    make_runs_clone(config, report)  # before its units start: its first run then copies it, no clone of its own
    write_launcher(config, report)
    changed, started = unit_install.install_and_start(config, str(home), options.units_dir)
    for unit, was_written in changed.items():
        report.add(f"unit file {unit}" + ("" if "@." in unit or unit == "ocx.slice" else " drop-in"), was_written)
    for unit, state, was_started in started:
        report.add(f"{unit} {state}".strip(), was_started)
    return report


def _registered(config: NodeConfig) -> dict[str, Any] | None:
    """What the server says of this node, asked as its node user; None when it cannot log in."""
    if not config.password_file.exists():
        return None
    try:
        return ServerLink.of_node(config).whoami()
    except (ServerRefused, Unreachable, WebError):
        return None


def _register_and_clone(options: ElsewhereOptions, config: NodeConfig, home: Path, report: InitReport,
                        config_existed: bool = True) -> None:
    clone = Path(config.repository)
    code = _server_code(clone) if clone.exists() else None
    enforces = sorted(ENFORCED_RESTRICTIONS)  # D24: the same code holds the same restrictions
    known = _registered(config)
    registered = known["node"]["server_code"] if known else None
    admin: ServerLink | None = None
    if known is None or known["node"]["name"] != config.name or registered not in (None, code):
        # The node user is new, its password lost, or its clone is not the registered one: an admin's
        # authority is needed, a login or a join token made on the server's page.
        if options.join_token is not None:
            answer = join_answer(config.url, options.join_token(), config.name, config.node_user, code, enforces)
            how = "with a join token"
        else:
            admin = ServerLink(config.url, options.admin_login, options.admin_password())
            answer = admin.register(config.name, config.node_user, code, enforces, password=known is None,
                                    replace=options.replace)
            how = f"by {options.admin_login}"
        password: str | None = answer.get("password")
        _say_replaced(answer.get("replaced"), report)
        registered = code
        if password is not None:
            node_config.save(config, password)
            os.chmod(config.password_file, 0o600)
            session_file(config.state_dir).unlink(missing_ok=True)  # a session of its former password
            report.add(f"node user {config.node_user} registered on {config.url} {how}; its password in "
                       f"{config.password_file} (0600)", True)
    else:
        report.add(f"node user {config.node_user} registered on {config.url}", False)
    if not clone.exists():
        CallerClone.create(clone, config.url, config.node_user, config.node_password(), home=home)
        os.chmod(clone, 0o600)  # it keeps the node user's sync secret (fossil-facts.md)
        code = _server_code(clone)
        report.add(f"clone {clone} over HTTP as {config.node_user}: server-code {code}", True)
    else:
        report.add(f"clone {clone}: server-code {code}", False)
    if registered != code:
        if admin is not None:
            admin.register(config.name, config.node_user, code, enforces, password=False)
        else:  # registered with none yet (a join): the node user names it, once
            ServerLink.of_node(config).name_code(str(code))
        report.add(f"node {config.name} = server-code {code} in the server's list of nodes (D36)", True)
    _mark(config, report)
    path = node_config.config_path(config.name)
    before = path.read_text() if path.exists() else None
    after = json.dumps(config.model_dump(), indent=2) + "\n"
    if before != after:
        node_config.save(config)
    report.add(f"configuration {path}" + ("" if config_existed else ": created"), before != after or not config_existed)


def _say_replaced(replaced: Mapping[str, Any] | None, report: InitReport) -> None:
    """What the node this one replaced left (serving/leaving.py), said so an admin answers its records (D31)."""
    if not replaced:
        return
    old = replaced["node"]
    report.add(f"replaced node {old['name']} of server-code {old['server_code']}: "
               f"{len(replaced['withdrawn'])} run users' letters withdrawn (C5)", True)
    for record in replaced["open"]:
        report.add(f"its record {record['record']} is open: an admin answers it lost once its wall has passed "
                   f"(D31): ocx stop --record {record['record']} --lost", True)


def _server_code(clone: Path) -> str:
    with Repository(clone) as repository:
        return repository.server_code


def _mark(config: NodeConfig, report: InitReport) -> None:
    """No record can name this node before its server-code existed: its passes start at the server's newest receipt."""
    path = config.state_dir / "mark.json"
    if path.exists():
        return
    last = int(ServerLink.of_node(config).whoami()["last"])
    write_atomically(path, json.dumps({"rcvid": last}) + "\n")
    report.add(f"mark at the server's receipt {last}", True)

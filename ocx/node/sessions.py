"""A session record becomes a transient unit (C3, D3, D13-D17, D19).

`session_service` is pure: from a record, its runner page and the node's
configuration to the unit systemd will hold. `prepare` makes the run's
home (a clone over HTTP as the run user and a checkout) before start.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..fossil.sync import CallerClone
from ..protocol.decide import OpenRecord
from ..systemd.units import BindPath, ExecCommand, TransientService
from .config import NodeConfig
from .feeder import KEEP as KEEP_ENVIRONMENT
from .layout import SLICE, RunHome, unit_name
from .records import RecordDir
from .runner_pages import RunnerPage

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"  # D15: the host's system directories
INBOX_INSIDE = "/run/ocx-inbox"  # where a session sees its inbox, read-only (D13)
CLONE, CHECKOUT = "repo.fossil", "checkout"


def environment(home: str, user: str, page_env: dict[str, str]) -> dict[str, str]:
    """D15, exactly: nothing inherited from whoever started the node. The
    feeder hands the program only these names, none of systemd's own."""
    wanted = {"HOME": home, "USER": user, "PATH": SYSTEM_PATH, "LANG": "C.UTF-8", **page_env}
    return {**wanted, KEEP_ENVIRONMENT: ",".join(wanted)}


def hidden_paths(config: NodeConfig) -> list[str]:
    """D16: the node's repository, its state and its secrets are not the run's to see."""
    # "-": a path that does not exist on this host is simply not there to hide.
    return [f"-{p}" for p in config.own_paths()]


def stop_step(config: NodeConfig, record_dir: RecordDir, stem: str) -> ExecCommand:
    """D4: systemd runs it as root when the program ends; it records the end and pokes the node."""
    return ExecCommand(argv=[config.python, "-m", "ocx.node.ended", config.name, record_dir.hash, stem],
                       privileged=True)


def session_service(config: NodeConfig, server_code: str, opened: OpenRecord, page: RunnerPage,
                    record_dir: RecordDir) -> TransientService:
    record = opened.record
    name = unit_name(server_code, opened.hash)
    home = RunHome(name.removesuffix(".service"))
    budget, sandbox = record.budget, record.sandbox
    cpu = ["--cpu", str(budget.cpu), "--rate", str(config.cpu_quota)] if budget.cpu else []
    feeder = [config.python, "-m", "ocx.node.feeder", INBOX_INSIDE, *cpu, "--", *page.argv(record.remote)]
    return TransientService(
        name=name,
        # D3: systemctl status names the record, the runner and the user.
        description=f"OCX record {opened.hash} runner {record.runner} as {record.user}",
        slice=SLICE,
        argv=feeder,
        environment=environment(str(home.inside), record.user, page.env),
        working_directory=str(home.inside),
        dynamic_user=True,
        state_directory=[home.state_directory],
        memory_max=budget.memory_bytes,
        tasks_max=budget.processes,
        runtime_max_sec=budget.wall_seconds,
        cpu_quota=config.cpu_quota,
        protect_system="strict",
        protect_home="tmpfs",
        private_tmp=True,
        private_network=not sandbox.network,  # D34
        read_only_paths=list(sandbox.read_only),
        read_write_paths=[*sandbox.read_write, *page.homes],
        inaccessible_paths=hidden_paths(config),
        bind_paths=[BindPath(str(record_dir.inbox), INBOX_INSIDE, read_only=True),
                    *[BindPath(h) for h in page.homes]],
        exec_stop_post=[stop_step(config, record_dir, home.stem)],
        standard_output="journal",
        standard_error="journal",
        add_ref=False,
        timeout_stop_sec=30,
    )


def prepare(config: NodeConfig, home: RunHome, user: str, password: str, *, keep_password: bool,
            fossil_home: Path) -> Path:
    """The run's home on the host: a clone over HTTP as its user, and a checkout (D16).

    A `no_password` run's clone keeps no password (C6): it writes through
    the node's tools instead.
    """
    root = home.on_host
    if root.exists():
        shutil.rmtree(root)  # a half-made home from a pass that crashed
    root.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(root.parent.parent, 0o700)  # /var/lib/private, as systemd keeps it
    root.mkdir(mode=0o700)
    clone = CallerClone.create(root / CLONE, config.url, user, password, home=root, save_password=keep_password)
    checkout = clone.open_checkout(root / CHECKOUT)
    if keep_password:
        clone.set_setting("autosync", "on")  # it writes with Fossil as a person does (C5)
    return checkout

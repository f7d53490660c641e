"""What systemd holds for a run: its transient unit (C3, D3, D13-D17, D19).

`session_service` (a session record's one run) and `command_service` (a
command record's run of one check-in) are pure: from a record, its runner
page or check-in and the node's configuration to the unit systemd will hold;
start_stop.py asks systemd for it. The run's home (a clone over
HTTP as the run user and a checkout) is made by prepare.py: in the unit's
ExecStartPre where the run has network, by the node before start otherwise.
"""
from __future__ import annotations

import functools
import os
from typing import TypedDict

from ..node.config import NodeConfig
from ..node.host_paths import KEEP_ENVIRONMENT, steps_socket_path
from ..node.record_dirs import RecordDir
from ..node.run_layout import SLICE, TOOLS_INSIDE, RunHome, unit_name
from ..node.runner_homes import copy_path
from ..node.runner_pages import RunnerPage
from ..node.template import template_path
from ..protocol.decide import OpenRecord
from ..run_steps.prepare import Preparation
from ..systemd.hardening import Hardening
from ..systemd.units import BindPath, ExecCommand, TransientService
from .context import NodeContext
from .sandbox import run_hardening

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"  # D15: the host's system directories
INBOX_INSIDE = "/run/ocx-inbox"  # where a session sees its inbox, read-only (D13)
PREPARE_TIMEOUT_SECONDS = 600  # a clone of a large repository; RuntimeMaxSec counts only after it
# The stop step runs in the run's own cgroup, inside ocx.slice: when runs fill the slice it gets
# little CPU and PID 1 is slow to answer it; past this systemd kills it and the end goes unrecorded
# (seen at 30 s with fifty runs eating memory; docs/security.md, 'The node and the server, protected
# from runs'). It also bounds SIGTERM before SIGKILL.
STOP_TIMEOUT_SECONDS = 90
LAST_LINE = ".ocx-last-line"  # in a check-in run's home: its program's last line of output


# A unit that failed stays in systemd's memory, with its Result and exit status, until the node
# has answered its record (cleanup.py resets it): systemd's own record of the end, should the
# stop step have kept none (node/run_end.py, D4, D6). One that ended well is collected at once.
KEPT_WHEN_FAILED = "inactive"


def environment(home: str, user: str, page_env: dict[str, str]) -> dict[str, str]:
    """D15, exactly: nothing inherited from whoever started the node. The
    feeder hands the program only these names, none of systemd's own."""
    wanted = {"HOME": home, "USER": user, "PATH": SYSTEM_PATH, "LANG": "C.UTF-8", **page_env}
    return {**wanted, KEEP_ENVIRONMENT: ",".join(wanted)}


def hidden_paths(config: NodeConfig) -> list[str]:
    """D16: the node's repository, its state and its secrets are not the run's to see."""
    # "-": a path that does not exist on this host is simply not there to hide.
    return [f"-{p}" for p in config.own_paths()]


@functools.cache
def own_code_path() -> tuple[str, ...]:
    """Where a run's steps find OCX and its dependencies: this process's own site-packages and the
    directory its `ocx` package is in (the same for a release, D47), both root's; what `site` would
    have put on sys.path after the standard library, in its order, without running its .pth files."""
    import sysconfig

    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    return tuple(dict.fromkeys([os.path.realpath(sysconfig.get_path("purelib")), package_root]))


# `-c`, not `-m`: runpy and its imports cost a start; the module stays a word of its own in argv.
_RUN_MODULE = ("import sys; sys.path += {path!r}; "
               "sys.exit(__import__(sys.argv.pop(1), fromlist=['main']).main(sys.argv[1:]))")
# A privileged step through its door: handed to the node's step service, forked there already loaded,
# or run here when the service does not take it (run_steps/step_door.py, docs/node.md).
_THROUGH_DOOR = ("import sys; sys.path += {path!r}; from ocx.run_steps.step_door import main; "
                 "sys.exit(main({socket!r}, sys.argv[1:]))")


def python_module(config: NodeConfig, module: str, *args: str, door: bool = False) -> list[str]:
    """`python -I -S -c RUN MODULE ARGS`: isolated (D41), so neither the working directory nor
    PYTHON* variables nor a user site put anything on sys.path; without `site` (-S: its .pth files
    and the venv's set-up were a tenth of a step's start), sys.path gets `own_code_path` instead.
    DOOR: a privileged step of a run's, handed to the node's step service first (step_door.py)."""
    run = (_THROUGH_DOOR.format(path=own_code_path(), socket=steps_socket_path(config.name)) if door
           else _RUN_MODULE.format(path=own_code_path()))
    return [config.python, "-I", "-S", "-c", run, module, *args]


def stop_step(config: NodeConfig, record_dir: RecordDir, stem: str) -> ExecCommand:
    """D4: systemd runs it as root when the program ends; it records the end and pokes the node."""
    return ExecCommand(argv=python_module(config, "ocx.run_steps.stop_step", config.name, record_dir.hash, stem,
                                          door=True), privileged=True)


def preparation(config: NodeConfig, record_dir: RecordDir, opened: OpenRecord, stem: str,
                checkin: str | None = None, homes: list[str] | None = None,
                keep: tuple[tuple[int, str], ...] = (), pull: bool = False, ahead: int | None = None,
                wait_for: int | None = None) -> Preparation:
    """PULL: the run's copy pulls first, as the run user, since the node's
    clone could not be brought up to what the run was given (template.ensure).
    AHEAD: the mark of the home made ahead the node put in the run's place (spare.take).
    WAIT_FOR: the node pulls its clone up to this receipt once the unit is started."""
    record = opened.record
    return Preparation(config.repository, config.url, record.user, RunHome(stem).on_host, record_dir.path, stem,
                       config.state_dir / "home", template_path(config), pull=pull,
                       keep_password=not record.restrict.no_password, checkin=checkin,
                       runner_homes=tuple(homes or ()), keep=keep, network=record.sandbox.network,
                       # D37: a node elsewhere's run users are the server's node's to grant
                       server_login=config.node_user if config.elsewhere else None,
                       server_password_file=str(config.password_file) if config.elsewhere else None,
                       ahead=ahead, wait_for=wait_for,
                       # a session's program starts after those whose records came before (in_order.py)
                       order=opened.rcvid if checkin is None else None)


def prepare_step(config: NodeConfig, step: Preparation) -> ExecCommand:
    """Privileged, so it can write the repository's user table and the run's home."""
    return ExecCommand(argv=python_module(config, "ocx.run_steps.prepare", *step.argv(), door=True), privileged=True)


def prepared_in_unit(opened: OpenRecord) -> bool:
    """D34: a run without network cannot reach the server from its own unit."""
    return opened.record.sandbox.network

class Confinement(TypedDict):
    """What a session's unit and a check-in run's unit share: user, budget, sandbox and end."""

    slice: str
    dynamic_user: bool
    state_directory: list[str]
    memory_max: int | None
    tasks_max: int | None
    runtime_max_sec: float | None
    cpu_quota: float | None
    protect_system: str
    protect_home: str
    private_tmp: bool
    private_network: bool
    read_only_paths: list[str]
    read_write_paths: list[str]
    inaccessible_paths: list[str]
    hardening: Hardening
    timeout_start_sec: float
    exec_stop_post: list[ExecCommand]
    standard_output: str
    standard_error: str
    add_ref: bool
    collect_mode: str
    timeout_stop_sec: float


def confinement(config: NodeConfig, opened: OpenRecord, home: RunHome, record_dir: RecordDir,
                egress_filter: str | None) -> Confinement:
    """One run's user, budget and sandbox as unit properties (D16, D17, D34; docs/security.md,
    'The unit's sandbox'), the same for both kinds of run. No WorkingDirectory: systemd runs the `+`
    steps in it too, as root (D41); the feeder enters the home."""
    budget, sandbox = opened.record.budget, opened.record.sandbox
    return Confinement(
        slice=SLICE,
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
        read_write_paths=list(sandbox.read_write),  # a session's homes' copies are bound read-write
        inaccessible_paths=hidden_paths(config),
        hardening=run_hardening(sandbox.network, egress_filter),
        timeout_start_sec=PREPARE_TIMEOUT_SECONDS,
        exec_stop_post=[stop_step(config, record_dir, home.stem)],
        standard_output="journal",
        standard_error="journal",
        add_ref=False,
        collect_mode=KEPT_WHEN_FAILED,  # forgotten once answered or judged (cleanup.py, tend.py)
        timeout_stop_sec=STOP_TIMEOUT_SECONDS,
    )


def session_service(config: NodeConfig, server_code: str, opened: OpenRecord, page: RunnerPage,
                    record_dir: RecordDir, egress_filter: str | None = None, pull: bool = False,
                    ahead: int | None = None) -> TransientService:
    """EGRESS_FILTER: the pinned loopback program a run with network needs (sandbox.py); PULL and AHEAD:
    `preparation`'s."""
    record = opened.record
    name = unit_name(server_code, opened.hash)
    home = RunHome(name.removesuffix(".service"))
    # D32: the program runs under a terminal its unit holds; root on the host attaches through its socket.
    # D17's cpu is held from outside the run (cpu_watch.py), not by anything the run could stop.
    feeder = python_module(config, "ocx.inside_run.feeder", INBOX_INSIDE, "--terminal", str(home.terminal_socket),
                           "--cwd", str(home.inside), "--", *page.argv(record.remote))
    return TransientService(
        name=name,
        # D3: systemctl status names the record, the runner and the user.
        description=f"OCX record {opened.hash} runner {record.runner} as {record.user}",
        argv=feeder,
        environment=environment(str(home.inside), record.user, page.env),
        **confinement(config, opened, home, record_dir, egress_filter),
        runtime_directory=[home.runtime_directory],  # D32: the terminal's socket, the run's own
        runtime_directory_mode=0o700,
        bind_paths=[BindPath(str(record_dir.inbox), INBOX_INSIDE, read_only=True),
                    # D14's homes, each as the run's own copy (runner_homes.py: a sign-in carries over).
                    # "-": the preparation makes the copy, so it is there for the program, not for
                    # the preparation's own namespace, which systemd sets up first.
                    *[BindPath(str(copy_path(home.on_host, i)), h, ignore_missing=True)
                      for i, h in enumerate(page.homes)],
                    # only this unit reaches its tool socket (C6 no_password, D34)
                    *([BindPath(str(record_dir.tools), TOOLS_INSIDE)]
                      if record.restrict.no_password or not record.sandbox.network else [])],
        exec_start_pre=[prepare_step(config, preparation(config, record_dir, opened, home.stem, homes=page.homes,
                                                                   keep=page.kept(), pull=pull, ahead=ahead))]
        if prepared_in_unit(opened) else [],
    )


def command_service(context: NodeContext, opened: OpenRecord, record_dir: RecordDir, checkin: str,
                    egress_filter: str | None = None, pull: bool = False, ahead: int | None = None,
                    wait_for: int | None = None) -> TransientService:
    """The unit of one check-in's run: the session's sandbox, no deliveries (D16, D17); PULL, AHEAD and
    WAIT_FOR: `preparation`'s."""
    config, record = context.config, opened.record
    name = unit_name(context.server_code, opened.hash, checkin)
    home = RunHome(name.removesuffix(".service"))
    last_line = str(home.inside / LAST_LINE)
    checkout = home.inside / "checkout"  # the program runs at the check-in's root; the feeder enters it
    argv = python_module(config, "ocx.inside_run.feeder", "-", "--last-line", last_line, "--cwd", str(checkout),
                         "--", *(record.command or []))
    step = preparation(config, record_dir, opened, home.stem, checkin, pull=pull, ahead=ahead, wait_for=wait_for)
    return TransientService(
        name=name,
        description=f"OCX record {opened.hash} command on {checkin} as {record.user}",  # D3
        argv=argv,
        environment=environment(str(home.inside), record.user, {}),
        **confinement(config, opened, home, record_dir, egress_filter),
        exec_start_pre=[prepare_step(config, step)] if prepared_in_unit(opened) else [],
        standard_input="null",
    )

"""Starting and stopping runs through systemd (C3, C5, D3, D19)."""
from __future__ import annotations

import time

from ..fossil import admin
from ..fossil.errors import UnknownUser
from ..fossil.repository import Repository
from ..protocol.decide import OpenRecord
from ..protocol.deliveries import record_delivery
from .context import NodeContext
from .layout import RunHome, unit_name
from .records import RecordDir
from .runner_pages import RunnerPage
from .sessions import prepare, session_service

# D19: clone (g), check in and push (i, which brings o), read tickets (r),
# read the forum (2), post to it (3) unmoderated (4). Nothing else of its own:
# no admin, setup, password change, nor u/v's inherited letters. Every login
# still holds `nobody`'s letters, as Fossil gives them to anyone.
RUN_USER_CAPABILITIES = "gior234"


def ensure_run_user(context: NodeContext, repository: Repository, login: str) -> str:
    """The run user with exactly D19's letters and a new random password, made if new (C5)."""
    repository_file = context.config.repository
    try:
        repository.user(login)
    except UnknownUser:
        return admin.create_user(repository_file, login, RUN_USER_CAPABILITIES, "OCX run user",
                                 home=context.fossil_home)
    admin.set_capabilities(repository_file, login, RUN_USER_CAPABILITIES, home=context.fossil_home)
    return admin.set_random_password(repository_file, login, home=context.fossil_home)


async def start_session(context: NodeContext, systemd, repository: Repository, record_dir: RecordDir,
                        opened: OpenRecord, page: RunnerPage) -> str:
    """Run user, home, first delivery, then the unit; returns the unit's name."""
    record = opened.record
    password = ensure_run_user(context, repository, record.user)
    service = session_service(context.config, context.server_code, opened, page, record_dir)
    home = RunHome(service.name.removesuffix(".service"))
    prepare(context.config, home, record.user, password, keep_password=not record.restrict.no_password,
            fossil_home=context.fossil_home)
    del password  # never kept by the node for a run that holds it (D19)
    record_dir.deliver(record_delivery(opened.hash, record.objective))  # C3: its first delivery
    # D6: the mark says it started, so a unit found gone later means lost.
    record_dir.mark("started", {"unit": service.name, "at": time.time()})
    await systemd.start(service)
    context.log(f"started {service.name} for {record.user}", record=opened.hash)
    return service.name


async def stop_session(context: NodeContext, systemd, record_dir: RecordDir, by: str, stop_hash: str) -> bool:
    """Stop the run's unit; its end writes `stopped` (D4). False if it was not running."""
    opened, _ = record_dir.load()
    name = unit_name(context.server_code, opened.hash)
    state = await systemd.state(name)
    if state is None or state.active_state not in ("active", "activating", "reloading"):
        return False
    record_dir.mark("stop", {"by": by, "stop": stop_hash})  # read by the stop step
    await systemd.stop(name)
    context.log(f"stopping {name}: stop {stop_hash[:12]} by {by}", record=opened.hash)
    return True

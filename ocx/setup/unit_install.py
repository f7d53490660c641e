"""The node's units on its host: units/ copied into /etc/systemd/system, the
drop-ins only the node knows (its account, repository and port), then
reload, enable and start over D-Bus (ocx/systemd/unit_files.py).

Templates hold what every node shares; a drop-in per instance holds what a
template cannot know (D26: the path unit's file). A file is written only
when its text differs, and systemd is reloaded only then, so a second init
changes nothing. A unit whose files changed is restarted, others started.
"""
from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path
from urllib.parse import urlparse

from ..files import write_atomically
from ..node.config import NodeConfig

SOURCE_UNITS = Path(__file__).resolve().parents[2] / "units"
SYSTEM_UNITS = Path("/etc/systemd/system")
TEMPLATES = ("ocx.slice", "ocx-fossil@.service", "ocx-node@.socket", "ocx-node@.service",
             "ocx-node@.path", "ocx-wake@.service", "ocx-check@.service",
             "ocx-tools@.service",  # no_password runs' tool sockets (D22)
             "ocx-page@.socket", "ocx-page@.service",  # the web page, kept up (D30)
             "ocx-steps@.socket", "ocx-steps@.service")  # runs' steps forked already loaded
# D36: a node elsewhere serves no repository (no Fossil server, hook or path
# unit) and has a follower instead (D38).
ELSEWHERE_TEMPLATES = ("ocx.slice", "ocx-node@.socket", "ocx-node@.service", "ocx-check@.service",
                       "ocx-tools@.service", "ocx-follow@.service", "ocx-steps@.socket", "ocx-steps@.service")
DROP_IN = "node.conf"


def port_of(url: str) -> int:
    return urlparse(url).port or 80


def instance_units(name: str) -> dict[str, str]:
    """What each unit of node NAME is, for the report and the docs."""
    return {
        f"ocx-fossil@{name}.service": "the Fossil server (its own account, 127.0.0.1)",
        f"ocx-node@{name}.socket": "the node's socket: hook and stop steps poke it (D4, D27)",
        f"ocx-node@{name}.path": "watches the repository file (D26), through ocx-wake@{name}.service",
        f"ocx-node@{name}.service": "the root service, started on demand by the two above",
        f"ocx-check@{name}.service": "the deliberate check at boot (D6)",
        f"ocx-tools@{name}.service": "the tool sockets of no_password runs (C6, D22, D34)",
        f"ocx-page@{name}.socket": "the web page's socket: its door, the ext program, hands requests here (D30)",
        f"ocx-page@{name}.service": "the web page, kept up: each request in a process of its own (D30)",
        f"ocx-steps@{name}.socket": "the runs' step service's socket: a run's preparation and stop step hand "
                                    "themselves here",
        f"ocx-steps@{name}.service": "the runs' step service: each step forked already loaded, in its run's unit",
    }


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def templates(config: NodeConfig) -> tuple[str, ...]:
    return ELSEWHERE_TEMPLATES if config.elsewhere else TEMPLATES


def drop_ins(config: NodeConfig, home: str) -> dict[str, str]:
    """Unit name → the text of its drop-in."""
    name, account = config.name, config.server_account
    head = f"# Written by `ocx node init`; a rerun rewrites it from /etc/ocx/{name}.json.\n"
    if config.elsewhere:  # no Fossil server's account here: only root pokes (a run's stop step, the follower)
        return {f"ocx-node@{name}.socket": head + "[Socket]\nSocketGroup=root\n"}
    return {
        f"ocx-fossil@{name}.service": head + "[Service]\n"
        f"User={account}\nGroup={account}\n"
        f"Environment={_quoted('OCX_REPOSITORY=' + config.repository)} OCX_PORT={port_of(config.url)}"
        f" {_quoted('HOME=' + home)} {_quoted('OCX_EXTROOT=' + str(config.extroot))}"
        + (" OCX_LISTEN=" if config.public else "") + "\n",
        f"ocx-node@{name}.socket": head + f"[Socket]\nSocketGroup={account}\n",
        f"ocx-node@{name}.path": head + f"[Path]\nPathChanged={config.repository}\n",
        # The page runs as the server's account, and only that account reaches its socket.
        f"ocx-page@{name}.socket": head + f"[Socket]\nSocketUser={account}\nSocketGroup={account}\n",
        f"ocx-page@{name}.service": head + f"[Service]\nUser={account}\nGroup={account}\n",
    }


def write_if_changed(path: Path, text: str) -> bool:
    if path.exists() and path.read_text() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, text)
    return True


def install_files(config: NodeConfig, home: str, source: Path = SOURCE_UNITS,
                  target: Path = SYSTEM_UNITS) -> dict[str, bool]:
    """File name (template or drop-in's unit) → whether it was written."""
    changed = {}
    for template in templates(config):
        changed[template] = write_if_changed(target / template, (source / template).read_text())
    for unit, text in drop_ins(config, home).items():
        changed[unit] = write_if_changed(target / f"{unit}.d" / DROP_IN, text)
    return changed


def _touched(unit: str, changed: dict[str, bool]) -> bool:
    template = unit.split("@")[0] + "@." + unit.rsplit(".", 1)[1]
    return changed.get(unit, False) or changed.get(template, False)


async def _enable_and_start(enable: tuple[str, ...], start: tuple[str, ...], changed: dict[str, bool],
                            timeout: float, node: str) -> list[tuple[str, str, bool]]:
    """Reload if a file changed, enable ENABLE, start (or restart, when its file changed) START,
    and restart NODE's service if it is up and its file changed (it stays up, serve.py);
    returns (unit, state, changed)."""
    from ..systemd import unit_files
    from ..systemd.bus import Bus

    done = []
    bus = await Bus.connect()
    try:
        if any(changed.values()):
            await unit_files.reload(bus)
        enabled = await unit_files.enable(bus, list(enable))
        done.append(("enabled: " + ", ".join(enable), "", bool(enabled.changes)))
        was_active: dict[str, bool] = {}
        for unit in start:
            before, _ = await unit_files.active_state(bus, unit)
            was_active[unit] = before == "active"
            restart = before == "active" and _touched(unit, changed)
            state = await unit_files.start(bus, unit, restart=restart, timeout=timeout)
            if state != "active":
                raise RuntimeError(f"{unit} is {state} after start; see journalctl -u {unit}")
            # The page's service, which a release's move stops for its socket to start it on demand
            # (D46), is started again so the first look is quick; nothing was made when its socket
            # answered all along.
            on_demand = unit.startswith("ocx-page@") and was_active.get(unit.removesuffix(".service") + ".socket")
            done.append((unit, state, (before != "active" and not on_demand) or restart))
        service = f"ocx-node@{node}.service"  # started on demand, not here: restarted only if up
        if _touched(service, changed) and (await unit_files.active_state(bus, service))[0] == "active":
            done.append((service, await unit_files.start(bus, service, restart=True, timeout=timeout), True))
    finally:
        bus.close()
    return done


async def activate(config: NodeConfig, changed: dict[str, bool], timeout: float = 20.0) -> list[tuple[str, str, bool]]:
    """The served repository's node: its server, socket, path unit, check, tools and page enabled;
    all but the check (a boot-time unit, D6) started."""
    name = config.name
    server, sock, path, check = (f"ocx-fossil@{name}.service", f"ocx-node@{name}.socket",
                                 f"ocx-node@{name}.path", f"ocx-check@{name}.service")
    tools = f"ocx-tools@{name}.service"  # D22
    page = (f"ocx-page@{name}.socket", f"ocx-page@{name}.service")  # D30: started now, so the first look is quick
    steps = steps_units(name)
    return await _enable_and_start((server, sock, path, check, tools, *page, *steps),
                                   (server, sock, path, tools, *page, *steps), changed, timeout, name)


def steps_units(name: str) -> tuple[str, str]:
    """The runs' step service and its socket (run_steps/step_server.py): started now, so a first run
    does not wait on its imports."""
    return f"ocx-steps@{name}.socket", f"ocx-steps@{name}.service"


def wait_listening(url_port: int, timeout: float = 20.0) -> float:
    """Seconds until the Fossil server accepts on 127.0.0.1 (it binds just after start)."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            with socket.create_connection(("127.0.0.1", url_port), timeout=0.5):
                return time.monotonic() - start
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{url_port} after {timeout:.0f} s")


async def activate_elsewhere(config: NodeConfig, changed: dict[str, bool],
                             timeout: float = 20.0) -> list[tuple[str, str, bool]]:
    """A node elsewhere's units: its socket, its tool sockets, its follower
    (D38), enabled and started; its check is started by the follower (D6)."""
    name = config.name
    units = (f"ocx-node@{name}.socket", f"ocx-tools@{name}.service", f"ocx-follow@{name}.service",
             *steps_units(name))
    return await _enable_and_start(units, units, changed, timeout, name)


def install_and_start(config: NodeConfig, home: str,
                      source: Path = SOURCE_UNITS) -> tuple[dict[str, bool], list[tuple[str, str, bool]]]:
    changed = install_files(config, home, source)
    if config.elsewhere:
        return changed, asyncio.run(activate_elsewhere(config, changed))
    started = asyncio.run(activate(config, changed))
    wait_listening(port_of(config.url))
    return changed, started

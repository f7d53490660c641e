"""`ocx demo`: the README's main job, on a host (or container) whose PID 1 is systemd.

A demo is a list of steps, each printing what it did; later steps (records
run end to end) are appended to `STEPS` without touching the first ones.
`ocx node init --name demo`, the optional relay of the published port
(only inside contrib/demo.sh's container), with `--wheelhouse` the node's
first release (cli/demo_release.py, by `ocx release`, D45), the demonstration
(demo_run.py: a CI record, a check-in and its verdict, a session answered
`exited`), and how to look.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .init import InitOptions, InitReport, init_node
from .unit_install import SOURCE_UNITS, SYSTEM_UNITS, instance_units, port_of, write_if_changed

NAME = "demo"


@dataclass
class Demo:
    name: str = NAME
    publish: int | None = None  # the container's published port, relayed to the server
    in_container: str | None = None  # the container's name, for `docker exec` hints
    wheelhouse: str | None = None  # OCX's dependencies' wheels: the node's first release is built with them (D45)
    units_dir: Path = SOURCE_UNITS
    report: InitReport | None = None
    said: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    def say(self, line: str = "") -> None:
        self.said.append(line)
        print(line, flush=True)


Step = Callable[[Demo], None]


def step_init(demo: Demo) -> None:
    report = init_node(InitOptions(name=demo.name, units_dir=demo.units_dir))
    demo.report = report
    config = report.config
    demo.say(f"Node {config.name}: " + ("set up" if report.changed else "already set up, nothing changed"))
    for step in report.steps:
        if step.changed:
            demo.say(f"  made: {step.what}")
    demo.say()
    demo.say(f"  Fossil server   {config.url}  (as Unix account {config.server_account}, not root)")
    demo.say(f"  repository      {config.repository}")
    if report.admin_login:
        demo.say(f"  admin login     {report.admin_login}, password in {report.admin_password_file} (root only)")
    demo.say(f"  node user       {config.node_user}, password in {config.password_file} (root only, D20)")
    demo.say(f"  configuration   /etc/ocx/{config.name}.json")
    demo.say()
    demo.say("  Units:")
    for unit, what in instance_units(config.name).items():
        demo.say(f"    {unit:28} {what}")


def step_publish(demo: Demo) -> None:
    """Inside the demo container only: Docker publishes the container's
    address, the server listens on its 127.0.0.1 (units/ocx-publish.socket)."""
    if demo.publish is None or demo.report is None:
        return
    from ..systemd import unit_files
    from ..systemd.bus import Bus

    target = f"127.0.0.1:{port_of(demo.report.config.url)}"
    changed = [write_if_changed(SYSTEM_UNITS / unit, (demo.units_dir / unit).read_text())
               for unit in ("ocx-publish.socket", "ocx-publish.service")]
    changed.append(write_if_changed(SYSTEM_UNITS / "ocx-publish.socket.d" / "port.conf",
                                    f"[Socket]\nListenStream=\nListenStream={demo.publish}\n"))
    changed.append(write_if_changed(SYSTEM_UNITS / "ocx-publish.service.d" / "target.conf",
                                    f"[Service]\nEnvironment=OCX_TARGET={target}\n"))

    async def start() -> str:
        bus = await Bus.connect()
        try:
            if any(changed):
                await unit_files.reload(bus)
            return await unit_files.start(bus, "ocx-publish.socket", restart=any(changed))
        finally:
            bus.close()

    state = asyncio.run(start())
    demo.say(f"  relay           port {demo.publish} of the container -> {target} (ocx-publish.socket {state})")


def step_demonstrate(demo: Demo) -> None:
    """Records run end to end: a CI record judging a check-in, then a session answered `exited`."""
    if demo.report is None or not demo.report.admin_login:
        return
    from .demo_run import Demonstration
    from .init import admin_password_file

    config = demo.report.config
    demo.say()
    demo.say(f"Demonstration, as {demo.report.admin_login} through the web page and a clone (see the forum):")
    run = Demonstration(config, demo.report.admin_login, admin_password_file(config.name).read_text().strip(), demo.say)
    run.runner_page()
    run.ci()
    run.session()


def step_how_to_look(demo: Demo) -> None:
    name = demo.name
    inside = f"docker exec -it {demo.in_container} " if demo.in_container else ""
    demo.say()
    demo.say("How to look:")
    if demo.in_container:
        demo.say(f"  docker exec -it {demo.in_container} bash      a shell where PID 1 is systemd")
    demo.say(f"  {inside}systemctl list-units 'ocx-*'")
    demo.say(f"  {inside}systemctl status ocx-fossil@{name} ocx-node@{name}.path ocx-node@{name}.socket")
    demo.say(f"  {inside}journalctl -u ocx-node@{name} -u ocx-fossil@{name}")
    demo.say(f"  {inside}cat /etc/ocx/{name}.admin-password")
    demo.say(f"  {inside}/opt/ocx/venv/bin/ocx activity -R {demo.report.config.repository if demo.report else '…'}"
             "    open records and their units (D33)")
    demo.say("  docs/operating.md says what each unit is for.")


STEPS: list[Step] = [step_init, step_publish, step_demonstrate, step_how_to_look]


def run_demo(demo: Demo, steps: list[Step] | None = None) -> Demo:
    for step in steps if steps is not None else STEPS:
        started = time.monotonic()
        step(demo)
        demo.timings[step.__name__] = time.monotonic() - started
    return demo

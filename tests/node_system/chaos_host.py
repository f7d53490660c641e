"""Driving chaos.py from the host: the container itself is one of the faults.

The driver runs inside the container; once it has posted RESTART_AT of the
records, the host restarts the whole container (systemd and every unit go
away; the files stay), then starts the driver again, which goes on where
it was cut off, then settles and reports (chaos_report.py).
"""
from __future__ import annotations

import json
import threading
import time

PYTHON = "/opt/ocx/venv/bin/python"
CHAOS = "/src/tests/node_system/chaos.py"


def chaos_step(container, *args: str) -> dict:
    done = container.exec([PYTHON, CHAOS, *args])
    assert done.exit_code == 0, f"chaos.py {' '.join(args)} exited {done.exit_code}:\n{done.output[-6000:]}"
    return json.loads(done.output.strip().splitlines()[-1])


def chaos(container, name: str, port: int, seed: int, records: int, seconds: float, server_restarts: int,
          restart_at: float = 0.5, log=print) -> dict:
    """The report of one chaos run; RESTART_AT None: no restart of the container."""
    began = time.monotonic()
    done = container.exec([PYTHON, CHAOS, "init", name, str(port)])
    assert done.exit_code == 0, done.output[-4000:]
    done = container.exec([PYTHON, CHAOS, "plan", name, str(seed), str(records), str(seconds), str(server_restarts)])
    assert done.exit_code == 0, done.output[-4000:]
    log(f"chaos seed {seed}: {records} records over {seconds:.0f} s, {server_restarts} server restarts"
        + ("" if restart_at is None else f", the container restarted at {restart_at:.0%} posted"))
    first = {}
    driver = threading.Thread(target=lambda: first.update(output=container.exec([PYTHON, CHAOS, "run", name]).output),
                              daemon=True)
    driver.start()
    if restart_at is not None:
        while driver.is_alive():
            progress = json.loads(container.exec([PYTHON, CHAOS, "progress", name]).output.strip().splitlines()[-1])
            if progress["posted"] >= restart_at * records:
                # Boot is `running` only once the jobs the boot check queued are done: the runs it
                # starts again, whose preparations share a busy host's cores.
                boot_timeout, container.boot_timeout = container.boot_timeout, max(container.boot_timeout, 300.0)
                try:
                    restarted = container.restart()
                finally:
                    container.boot_timeout = boot_timeout
                log(f"container restarted after {progress['posted']} records ({restarted:.1f} s to running)")
                break
            time.sleep(0.5)
    driver.join(timeout=600)
    chaos_step(container, "run", name)  # goes on where the restart cut it off
    log(f"faults over after {time.monotonic() - began:.0f} s; settling")
    report = chaos_step(container, "settle", name)
    report["seconds"] = round(time.monotonic() - began)
    return report

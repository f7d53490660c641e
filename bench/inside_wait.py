"""Waits the benchmark's parts inside the systemd container share (bench/inside_real.py, inside_cores.py)."""
import time


def mirror_done(name: str, timeout: float = 1800) -> None:
    """Wait for the node's git mirror update (D49) the adoption started: its first export of the whole
    history takes a core for half a minute, kept out of the figures that follow (docs/git.md)."""
    from ocx.node_service.git_update import unit_name
    from tests.node_system.harness import systemctl, wait_for

    began = time.monotonic()
    wait_for(lambda: systemctl("is-active", unit_name(name)).strip() not in ("active", "activating", "deactivating"),
             timeout, 1.0, "the git mirror's update")
    print(f"the git mirror's update (D49), waited for before the runner page: {time.monotonic() - began:.0f} s",
          flush=True)

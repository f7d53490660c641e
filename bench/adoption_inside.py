"""bench/adoption.py's part inside the systemd container: `python bench/adoption_inside.py NAME PORT HISTORY`."""
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ocx.fossil.sync import CallerClone  # noqa: E402
from ocx.node_service.git_update import unit_name  # noqa: E402
from tests.node_system.harness import journal, ocx, systemctl, wait_for  # noqa: E402


def main(name: str, port: str, history: str) -> None:
    import shutil

    from ocx.setup.account import ensure

    server, _ = ensure("fossil", "/var/lib/ocx-fossil")
    copy = Path(f"/var/lib/ocx-fossil/{name}.fossil")
    shutil.copyfile(history, copy)  # never the file itself (shared/data/README.md)
    shutil.chown(copy, server.name, server.name)
    password = Path(history + ".admin-password").read_text().strip()
    secret = Path(f"/etc/ocx/{name}.admin-password")
    secret.parent.mkdir(exist_ok=True)
    secret.write_text(password + "\n")
    secret.chmod(0o600)
    home = Path("/tmp/adoption-home")
    clones: list[tuple[float, float, str]] = []
    stop = threading.Event()
    began = time.monotonic()

    def clone_over_and_over() -> None:
        while not stop.is_set():
            at = time.monotonic()
            target = home / f"clone-{len(clones)}.fossil"
            try:
                CallerClone.create(target, f"http://127.0.0.1:{port}", "admin", password, home=home)
                error = ""
            except Exception as failure:  # printed: the benchmark's finding
                error = str(failure).splitlines()[-1][-120:]
            clones.append((at - began, time.monotonic() - at, error))
            print(f"clone at {at - began:.1f} s: {clones[-1][1]:.1f} s {error or 'ok'}", flush=True)
            target.unlink(missing_ok=True)

    init = threading.Thread(target=ocx, args=("node", "init", "--name", name, "--repository", str(copy),
                                              "--port", port), kwargs={"timeout": 600})
    init.start()
    wait_for(lambda: systemctl("is-active", f"ocx-fossil@{name}.service").strip() == "active", 120, 0.1, "the server")
    cloner = threading.Thread(target=clone_over_and_over)
    cloner.start()
    init.join()
    print(f"adopted in {time.monotonic() - began:.1f} s", flush=True)
    wait_for(lambda: "update(s) in" in journal(unit_name(name)), 1800, 1.0, "the mirror's first update")
    ended = time.monotonic()
    wait_for(lambda: clones and clones[-1][0] > ended - began, 600, 0.5, "a clone after the update")
    stop.set()
    cloner.join()
    print(next(line for line in journal(unit_name(name)).splitlines() if "update(s) in" in line))
    failed = [c for c in clones if c[2]]
    print(f"{len(clones)} clones, {len(failed)} failed, the longest {max(c[1] for c in clones):.1f} s")
    subprocess.run(["journalctl", "-u", f"ocx-node@{name}.service", "-o", "cat", "--no-pager", "-n", "8"])


if __name__ == "__main__":
    main(*sys.argv[1:4])

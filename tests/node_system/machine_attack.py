"""A run's program that attacks the machines of systemd-machined from inside its unit, as its run user:
not a stand-in for OCX. It registers a machine of its own, renames its own (unregister, then register
under another name), terminates, kills and unregisters its own and another run's, and stops its own unit,
each as busctl and systemctl do it; prints `attack JSON` (each call's exit code and words), then waits on
standard input, so the test finds it still running and still listed. Its objective (its first delivery,
D13) names the other run's machine: `attack OTHER`; its own is its unit's name, read from its cgroup."""
import json
import os
import subprocess
import sys

MACHINE1 = ["org.freedesktop.machine1", "/org/freedesktop/machine1", "org.freedesktop.machine1.Manager"]


def busctl(*call: str) -> dict:
    done = subprocess.run(["busctl", "call", *MACHINE1, *call], capture_output=True, text=True, timeout=30)
    return {"code": done.returncode, "said": (done.stdout + done.stderr).strip()[:300]}


def main() -> int:
    first = sys.stdin.readline()
    _, other = json.loads(first)["objective"].split()
    with open("/proc/self/cgroup") as cgroup:
        own = next(part for line in cgroup for part in line.strip().split("/") if part.endswith(".service"))
    own = own.removesuffix(".service")
    pid = str(os.getpid())
    attempts = {
        "register": busctl("RegisterMachine", "sayssus", "ocx-evil", "0", "evil", "container", pid, ""),
        "register_own_name": busctl("RegisterMachine", "sayssus", own, "0", "evil", "container", pid, ""),
        "create": busctl("CreateMachine", "sayssusa(sv)", "ocx-evil2", "0", "evil", "container", pid, "", "0"),
        "unregister_own": busctl("UnregisterMachine", "s", own),
        "rename_own": busctl("RegisterMachine", "sayssus", own + "-renamed", "0", "evil", "container", pid, ""),
        "terminate_own": busctl("TerminateMachine", "s", own),
        "kill_own": busctl("KillMachine", "ssi", own, "all", "15"),
        "terminate_other": busctl("TerminateMachine", "s", other),
        "kill_other": busctl("KillMachine", "ssi", other, "all", "15"),
        "unregister_other": busctl("UnregisterMachine", "s", other),
    }
    stop = subprocess.run(["systemctl", "stop", "--no-ask-password", f"{own}.service"], capture_output=True,
                          text=True, timeout=30)
    attempts["stop_own_unit"] = {"code": stop.returncode, "said": (stop.stdout + stop.stderr).strip()[:300]}
    print("attack " + json.dumps(attempts), flush=True)
    for _ in sys.stdin:  # deliveries, until its unit is stopped
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

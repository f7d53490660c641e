"""A run's program that attacks the machines of systemd-machined from inside its unit, as its run user:
not a stand-in for OCX. It registers a machine of its own, renames its own (unregister, then register
under another name), terminates, kills and unregisters its own and another run's, and stops its own unit,
each as busctl and systemctl do it; prints `attack JSON` (each call's exit code and words), then waits on
standard input, so the test finds it still running and still listed. Its objective (its first delivery,
D13) names the other run's machine: `attack OTHER`; its own is its unit's name, read from its cgroup,
unless named after it (`attack OTHER OWN`: the same calls from a unit that is no run's).

`forge`: it writes, to its output and to the journal's socket, the line PID 1 writes when root asks it
to signal a unit (`machinectl kill`), with its unit's fields, then kills itself with SIGTERM: its own
end must not read as root's."""
import json
import os
import signal
import socket
import subprocess
import sys

MACHINE1 = ["org.freedesktop.machine1", "/org/freedesktop/machine1", "org.freedesktop.machine1.Manager"]


def busctl(*call: str) -> dict:
    done = subprocess.run(["busctl", "call", *MACHINE1, *call], capture_output=True, text=True, timeout=30)
    return {"code": done.returncode, "said": (done.stdout + done.stderr).strip()[:300]}


def own_unit() -> str:
    with open("/proc/self/cgroup") as cgroup:
        return next(part for line in cgroup for part in line.strip().split("/") if part.endswith(".service"))


def forge() -> None:
    unit = own_unit()
    invocation = "0" * 32
    try:  # the feeder's environment, which systemd gave it
        with open(f"/proc/{os.getppid()}/environ", "rb") as environ:
            invocation = next((v.split(b"=", 1)[1].decode() for v in environ.read().split(b"\0")
                               if v.startswith(b"INVOCATION_ID=")), invocation)
    except OSError:
        pass
    line = f"{unit}: Sent signal SIGTERM to main process {os.getppid()} (python) on client request."
    print(line, flush=True)
    fields = {"MESSAGE": line, "UNIT": unit, "INVOCATION_ID": invocation, "SYSLOG_IDENTIFIER": "systemd",
              "_PID": "1", "_UID": "0", "_TRANSPORT": "journal", "PRIORITY": "6"}
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as journal:
            journal.sendto("".join(f"{k}={v}\n" for k, v in fields.items()).encode(), "/run/systemd/journal/socket")
    except OSError as error:
        print(f"forge: journal socket: {error}", flush=True)
    print(f"forged {invocation}", flush=True)
    os.kill(os.getpid(), signal.SIGTERM)


def main() -> int:
    first = sys.stdin.readline()
    if json.loads(first)["objective"] == "forge":
        forge()
    _, other, *named = json.loads(first)["objective"].split()
    own = named[0] if named else own_unit().removesuffix(".service")
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

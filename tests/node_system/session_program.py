"""A small session program for the node's tests: not a stand-in for OCX.

It reads delivery lines (D13) on standard input, prints each as it came
(so the test reads them back from the unit's journal), and acts on the
first one's objective: `exit N`, `sleep`, `eat memory`, `burn cpu`,
`probe` (print what it can see of the host as one JSON line), or `echo`
(keep reading deliveries until stdin closes; a line that is not JSON, as
someone attached to its terminal types it (D32), is printed `typed LINE`).
"""
import json
import os
import socket
import sys
import time


def probe() -> dict:
    def can_write(path):
        try:
            with open(path, "w") as handle:
                handle.write("x")
            os.unlink(path)
            return True
        except OSError:
            return False

    def visible(path):
        try:
            os.listdir(path) if os.path.isdir(path) else open(path).read(1)
            return True
        except OSError:
            return False

    def reaches(host_port):
        host, _, port = host_port.rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=2):
                return True
        except OSError:
            return False

    # /proc/net/dev is the network namespace's own; /sys/class/net is not remounted.
    with open("/proc/net/dev") as dev:
        interfaces = sorted(line.split(":")[0].strip() for line in dev.readlines()[2:])
    paths = json.loads(os.environ.get("PROBE_PATHS", "{}"))
    return {
        "environment": dict(os.environ),
        "cwd": os.getcwd(),
        "home_writable": can_write(os.path.join(os.environ.get("HOME", "/nonexistent"), "probe")),
        "usr_writable": can_write("/usr/ocx-probe"),
        "etc_writable": can_write("/etc/ocx-probe"),
        "tmp_writable": can_write("/tmp/ocx-probe"),
        "interfaces": interfaces,
        "reaches_server": reaches(os.environ["PROBE_SERVER"]) if "PROBE_SERVER" in os.environ else None,
        "visible": {name: visible(path) for name, path in paths.items()},
        "writable": {name: can_write(os.path.join(path, "probe")) for name, path in paths.items()},
    }


def main() -> int:
    first = sys.stdin.readline()
    print("delivery " + first.strip(), flush=True)
    objective = json.loads(first).get("objective", "") if first else ""
    if objective.startswith("exit "):
        return int(objective.split()[1])
    if objective.startswith("probe"):
        print("probe " + json.dumps(probe()), flush=True)
        return 0
    if objective.startswith("sleep"):
        words = objective.split()
        time.sleep(float(words[1]) if len(words) > 1 else 3600)
        return 0
    if objective.startswith("eat memory"):
        hoard = []
        while True:
            hoard.append(bytearray(8 * 1024 * 1024))
    if objective.startswith("burn cpu"):
        while True:
            pass
    for line in sys.stdin:  # echo: every later delivery, as it comes, and what is typed
        try:
            json.loads(line)
            kind = "delivery"
        except ValueError:
            kind = "typed"
        print(kind + " " + line.strip(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

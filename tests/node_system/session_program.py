"""A small session program for the node's tests: not a stand-in for OCX.

It reads delivery lines (D13) on standard input, prints each as it came
(so the test reads them back from the unit's journal), and acts on the
first one's objective: `exit N`, `sleep`, `eat memory`, `burn cpu`, `stop the
rest and burn cpu` (SIGSTOP every other process of the run first),
`probe` (print what it can see of the host as one JSON line), `push BRANCH`
(commit on BRANCH in its checkout and push it itself, over its network, as
its run user: print `pushed JSON`), or `echo`
(keep reading deliveries until stdin closes; a line that is not JSON, as
someone attached to its terminal types it (D32), is printed `typed LINE`).
"""
import json
import os
import signal
import socket
import subprocess
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
            with socket.create_connection((host.strip("[]"), int(port)), timeout=2):
                return True
        except OSError:
            return False

    def own_server(family, address):
        """A server of the run's own on loopback, and a connection to it."""
        try:
            with socket.socket(family) as server:
                server.bind((address, 0))
                server.listen()
                with socket.create_connection(server.getsockname()[:2], timeout=2):
                    return True
        except OSError as error:
            return str(error)

    def cgroup_of(pid):
        try:
            with open(f"/proc/{pid}/cgroup") as text:
                return next((line.split(":", 2)[2].strip() for line in text if line.startswith("0::")), "?")
        except OSError:
            return None

    def unshare():
        import subprocess
        done = subprocess.run(["unshare", "-Ur", "true"], capture_output=True, text=True, timeout=30)
        return {"status": done.returncode, "error": done.stderr.strip()}

    # The network namespace's own devices; /sys/class/net is not remounted, and a run
    # sees only its own processes' part of /proc (ProcSubset=pid), /proc/self/net among it.
    with open("/proc/self/net/dev") as dev:
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
        # docs/security.md, 'Kernel': what the kernel-facing sandbox holds
        "unshare": unshare(),
        "own_cgroup": cgroup_of("self"),
        "processes": {pid: cgroup_of(pid) for pid in os.listdir("/proc") if pid.isdigit()},
        "reaches": {name: reaches(where) for name, where in json.loads(os.environ.get("PROBE_REACH", "{}")).items()},
        "own_server": {"ipv4": own_server(socket.AF_INET, "127.0.0.1"), "ipv6": own_server(socket.AF_INET6, "::1")},
    }


def push(branch: str) -> dict:
    checkout = os.path.join(os.environ["HOME"], "checkout")
    name = f"pushed-{os.getpid()}"
    with open(os.path.join(checkout, name), "w") as out:
        out.write("by the run\n")

    def fossil(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["fossil", *args], cwd=checkout, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=120)

    fossil("add", name)
    made = fossil("commit", "-m", "pushed by the run", "--no-warnings", "--branch", branch)
    checkin = made.stdout.split("New_Version: ")[1].split()[0] if "New_Version: " in made.stdout else None
    pushed = fossil("push")
    return {"checkin": checkin, "commit": made.returncode, "push": pushed.returncode,
            "said": (made.stderr + pushed.stderr)[-400:]}


def main() -> int:
    first = sys.stdin.readline()
    print("delivery " + first.strip(), flush=True)
    objective = json.loads(first).get("objective", "") if first else ""
    if objective.startswith("exit "):
        return int(objective.split()[1])
    if objective.startswith("probe"):
        print("probe " + json.dumps(probe()), flush=True)
        return 0
    if objective.startswith("push "):
        print("pushed " + json.dumps(push(objective.split()[1])), flush=True)
        return 0
    if objective.startswith("sleep"):
        words = objective.split()
        time.sleep(float(words[1]) if len(words) > 1 else 3600)
        return 0
    if objective.startswith("eat memory"):
        hoard = []
        while True:
            hoard.append(bytearray(8 * 1024 * 1024))
    if objective.startswith("stop the rest and burn cpu"):
        # Every other process of the run stopped, the feeder among them: nothing of the run's
        # own can hold its cpu budget now (D17).
        for pid in os.listdir("/proc"):
            if pid.isdigit() and int(pid) != os.getpid():
                try:
                    os.kill(int(pid), signal.SIGSTOP)
                except OSError:
                    pass
        while True:
            pass
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

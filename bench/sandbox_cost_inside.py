"""Inside the systemd test container: what each of a run unit's sandbox settings costs in CPU.

Starts transient units with a run unit's own properties (run_units.confinement, sandbox.run_hardening;
a session without network) running /bin/true, ROUNDS times each, and reads the CPU of its processes
as PID 1's reaped children's (the test host's cgroups are v1, without CPU accounting): systemd's
forked child from the fork to the exec (namespaces, mounts, seccomp), and /bin/true. Then the same
without one setting (or a group, or with one swapped), rounds interleaved, and prints each one's mean
against the full set's, and PID 1's own CPU per unit.
"""
import os
import subprocess
import sys

NODE = "bench"
STEM = "x" * 12
# config.own_paths(): the repository's directory, the node's state, its configuration, its sockets, its git
OWN = ["/var/lib/ocx-repositories", f"/var/lib/ocx/{NODE}", "/etc/ocx", "/run/ocx", f"/var/lib/ocx-git/{NODE}"]
HOME_COPY = "/var/lib/private/ocx-runs/{u}/.runner-homes/0"  # a runner's home, the run's copy (D14)

FULL = {
    "DynamicUser": "yes", "StateDirectory": "ocx-runs/{u}", "MemoryMax": "1G", "MemorySwapMax": "0",
    "TasksMax": "64",
    "RuntimeMaxSec": "600", "CPUQuota": "100%", "ProtectSystem": "strict", "ProtectHome": "tmpfs",
    "PrivateTmp": "yes", "PrivateNetwork": "yes",
    "InaccessiblePaths": " ".join(f"-{p}" for p in OWN),
    "BindReadOnlyPaths": f"/var/lib/ocx/{NODE}/records/r/inbox:/run/ocx-inbox",
    "BindPaths": f"-{HOME_COPY}:/root/.claude /var/lib/ocx/{NODE}/records/r/tools:/run/ocx-tools",
    "RuntimeDirectory": "ocx-runs/{u}", "RuntimeDirectoryMode": "0700",
    "CapabilityBoundingSet": "", "AmbientCapabilities": "", "NoNewPrivileges": "yes",
    "SystemCallFilter": "@system-service ~@privileged ~@resources", "SystemCallErrorNumber": "EPERM",
    "SystemCallArchitectures": "native", "RestrictNamespaces": "yes", "RestrictAddressFamilies": "AF_UNIX",
    "PrivateDevices": "yes", "PrivateIPC": "yes", "ProtectKernelTunables": "yes", "ProtectKernelModules": "yes",
    "ProtectKernelLogs": "yes", "ProtectControlGroups": "yes", "ProtectClock": "yes", "ProtectHostname": "yes",
    "ProtectProc": "invisible", "ProcSubset": "pid", "LockPersonality": "yes", "RestrictRealtime": "yes",
    "RestrictSUIDSGID": "yes", "RemoveIPC": "yes", "UMask": "0077", "KeyringMode": "private",
    "DevicePolicy": "closed", "OOMScoreAdjust": "500",
}
MOUNTS = ("ProtectSystem", "ProtectHome", "PrivateTmp", "InaccessiblePaths", "BindReadOnlyPaths", "BindPaths",
          "PrivateDevices", "ProtectKernelTunables", "ProtectKernelModules", "ProtectKernelLogs",
          "ProtectControlGroups", "ProtectProc", "ProcSubset", "RuntimeDirectory", "StateDirectory")
FILTERS = ("SystemCallFilter", "SystemCallErrorNumber", "SystemCallArchitectures", "RestrictNamespaces",
           "RestrictAddressFamilies", "LockPersonality", "RestrictRealtime", "RestrictSUIDSGID", "ProtectClock",
           "ProtectHostname", "ProtectKernelModules", "ProtectKernelLogs", "PrivateDevices")
SWAPS = {  # a name: what replaces FULL's entries (None drops one)
    "no mount namespace settings (all of MOUNTS)": dict.fromkeys(MOUNTS),
    "no seccomp filter settings (all of FILTERS)": dict.fromkeys(FILTERS),
    "no namespaces but mount (-PrivateNetwork -PrivateIPC)": {"PrivateNetwork": None, "PrivateIPC": None},
    "ProtectHome=yes": {"ProtectHome": "yes"},
    "-BindPaths -BindReadOnlyPaths": {"BindPaths": None, "BindReadOnlyPaths": None},
    "-ProtectProc -ProcSubset": {"ProtectProc": None, "ProcSubset": None},
    # a probe of what a path's depth costs, not a setting to use: the node's releases are in /var/lib/ocx
    "parents hidden (/var/lib/ocx, /var/lib/ocx-git)": {
        "InaccessiblePaths": "-/var/lib/ocx-repositories -/var/lib/ocx -/etc/ocx -/run/ocx -/var/lib/ocx-git"},
    # cheaper by half, but not a setting to use either: systemd 252 applies TemporaryFileSystem= to the
    # unit's privileged (+) steps too, which then find the node's own directories empty
    "own paths as one TemporaryFileSystem": {"InaccessiblePaths": None,
                                            "TemporaryFileSystem": " ".join(f"{p}:ro" for p in OWN)},
}


def run(props: dict[str, str | None], tag: str, i: int) -> tuple[int, int]:
    unit = f"sbx-{tag}-{i}"
    os.makedirs(HOME_COPY.replace("{u}", unit), exist_ok=True)  # the preparation's, before the program
    argv = ["systemd-run", "--quiet", "--unit", unit, "-p", "Type=oneshot", "-p", "RemainAfterExit=yes",
            "-p", "CPUAccounting=yes"]
    for key, value in props.items():
        if value is not None:
            argv += ["-p", f"{key}={value.replace('{u}', unit)}"]
    own, reaped = pid1_ticks()
    subprocess.run(argv + ["/bin/true"], check=True)  # a oneshot's job ends once PID 1 has reaped it
    own_after, reaped_after = pid1_ticks()
    subprocess.run(["systemctl", "stop", unit], check=True)
    return reaped_after - reaped, own_after - own


def pid1_ticks() -> tuple[int, int]:
    """PID 1's own CPU and its reaped children's (the units' processes), in clock ticks: the kernel
    sums each child's exact runtime at reaping, so a sum over many units is exact to one tick."""
    fields = open("/proc/1/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])


def main(rounds: int = 30, only: str = "") -> None:
    for path in OWN:
        os.makedirs(path, exist_ok=True)
    for sub in ("inbox", "tools"):
        os.makedirs(f"/var/lib/ocx/{NODE}/records/r/{sub}", exist_ok=True)
    variants: dict[str, dict[str, str | None]] = {"full": dict(FULL), "none (bare /bin/true)": {}}
    for key in FULL:
        variants[f"-{key}"] = {**FULL, key: None}
    for name, swap in SWAPS.items():
        variants[name] = {**FULL, **swap}
    if only:
        variants = {k: v for k, v in variants.items() if k == "full" or any(k.startswith(o) for o in only.split(","))}
    # interleaved rounds, so a busy moment falls on every variant alike
    cpu: dict[str, list[int]] = {k: [] for k in variants}
    pid1: dict[str, int] = {k: 0 for k in variants}
    for i in range(rounds):
        for n, (name, props) in enumerate(variants.items()):
            c, t = run(props, f"{n}", i)
            cpu[name].append(c)
            pid1[name] += t
    ms = 1000 / os.sysconf("SC_CLK_TCK") / rounds
    full = sum(cpu["full"]) * ms
    print(f"{rounds} units each; CPU per unit in ms: its processes (fork to exit, /bin/true's own included), "
          "and PID 1's own")
    print(f"{'variant':55} {'unit ms':>8} {'vs full':>8} {'pid1 ms':>8}")
    for name in variants:
        mean = sum(cpu[name]) * ms
        print(f"{name:55} {mean:8.2f} {mean - full:+8.2f} {pid1[name] * ms:8.2f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main(*(int(a) if a.isdigit() else a for a in sys.argv[1:]))

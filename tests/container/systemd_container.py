"""A container whose PID 1 is systemd, for tests on hosts without one.

Not --privileged: this VM's capability bounding set lacks CAP_SYS_RESOURCE,
so Docker cannot apply "all caps" (shared/notes/real-systemd-for-tests.md).
The repository is mounted read-only at /src; `results` is writable at
/results. `restart()` reboots systemd, as later tests need to see systemd
go away and come back.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
DEFAULT_DOCKER_HOST = "unix:///run/ocx-docker.sock"
AGENTS_INSIDE = "/var/cache/ocx-tests/agents"  # the host's agent CLIs, read-only
WHEELHOUSE_INSIDE = "/var/cache/ocx-tests/wheelhouse"  # OCX's dependencies' wheels, read-only (releases, D45)


def wheelhouse(cache: str = "/var/cache/ocx-tests") -> Path | None:
    """The wheels build-image.sh built for this pyproject.toml's requirements, when complete."""
    import hashlib

    requirements = subprocess.run(["sh", str(REPO / "vagrant" / "provision.sh"), "--requirements",
                                   str(REPO / "pyproject.toml")], capture_output=True, check=True).stdout
    found = Path(cache) / f"wheelhouse-{hashlib.sha256(requirements).hexdigest()[:12]}"
    return found if (found / ".complete").is_file() else None

# Ryuk (testcontainers' reaper) is an image from Docker Hub, unreachable here;
# we stop our containers ourselves.
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")


def engine() -> str:
    """Start (if needed) the Docker engine; set and return DOCKER_HOST."""
    out = subprocess.run(["sh", str(HERE / "engine.sh")], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"engine.sh failed ({out.returncode}): {out.stderr.strip()[-2000:]}")
    host = out.stdout.strip().splitlines()[-1]
    os.environ["DOCKER_HOST"] = host
    return host


def build_image() -> str:
    """Build the test image (a no-op when its tag exists); return the tag."""
    out = subprocess.run(["bash", str(HERE / "build-image.sh")],
                         capture_output=True, text=True)
    if out.returncode != 0:
        tail = "\n".join(out.stderr.strip().splitlines()[-25:])
        raise RuntimeError(f"build-image.sh failed ({out.returncode}):\n{tail}")
    return out.stdout.strip().splitlines()[-1]


class Network:
    """A Docker network of its own for the hosts of one test (D36):
    each container on it has an address and is reached by its aliases."""

    def __init__(self) -> None:
        from testcontainers.core.network import Network as DockerNetwork

        self.network = DockerNetwork().create()

    def docker_network(self):
        import docker

        return docker.from_env().networks.get(self.network.id)

    def remove(self) -> None:
        self.network.remove()

    def __enter__(self) -> "Network":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


@dataclass
class ExecResult:
    exit_code: int
    output: str


class SystemdContainer:
    def __init__(self, image: str, results: Path | None = None,
                 src: Path = REPO, boot_timeout: float = 60.0,
                 ports: dict[int, int] | None = None, volumes: dict[str, str] | None = None,
                 network: "Network | None" = None, aliases: tuple[str, ...] = (),
                 hostname: str = "ocx-test", cpuset: str | None = None):
        self.image = image
        # The CPUs it may use (docker's cpuset_cpus, "0" or "0,1"): the benchmark's runs per core (bench/cores.py).
        self.cpuset = cpuset
        self.volumes = volumes or {}  # host path -> container path, read-only (the benchmark's data)
        # Hosts of one test (D36: a server and a build host) share a
        # Docker network, each on its own address, each known by its ALIASES.
        self.network = network
        self.aliases = aliases
        self.hostname = hostname
        # container port -> host port, published on the host's 127.0.0.1 only
        self.ports = ports or {}
        self.results = results
        self.src = src
        self.boot_timeout = boot_timeout
        self._c = None

    def _container(self):
        from testcontainers.core.container import DockerContainer

        cpus = {"cpuset_cpus": self.cpuset} if self.cpuset else {}
        c = (DockerContainer(self.image)
             .with_kwargs(**cpus, cap_add=["ALL"], cap_drop=["SYS_RESOURCE"],
                          security_opt=["seccomp=unconfined"], cgroupns="private",
                          device_cgroup_rules=["a *:* rwm"], stop_signal="SIGRTMIN+3",
                          hostname=self.hostname,
                          # ::1 and a link-local fe80:: address, as a host has them: the
                          # run's address filter is tested on both families (docs/security.md, 'The loopback filter').
                          sysctls={"net.ipv6.conf.all.disable_ipv6": "0",
                                   "net.ipv6.conf.lo.disable_ipv6": "0"})
             # systemd wants /run and /run/lock on tmpfs; with_kwargs(tmpfs=)
             # is overwritten by testcontainers (notes).
             .with_tmpfs_mount("/run")
             .with_tmpfs_mount("/run/lock")
             .with_volume_mapping(str(self.src), "/src", "ro"))
        agents = Path(os.environ.get("OCX_AGENTS_DIR", "/var/cache/ocx-tests/agents"))
        if agents.is_dir():  # the CLIs the runner pages name, run in a real unit (tests/contrib)
            c = c.with_volume_mapping(str(agents), AGENTS_INSIDE, "ro")
        wheels = wheelhouse()
        if wheels is not None:  # a release staged offline (tests/node_system/test_releases_stage.py)
            c = c.with_volume_mapping(str(wheels), WHEELHOUSE_INSIDE, "ro")
        for outside, inside in self.volumes.items():
            c = c.with_volume_mapping(outside, inside, "ro")
        if self.results is not None:
            self.results.mkdir(parents=True, exist_ok=True)
            c = c.with_volume_mapping(str(self.results), "/results", "rw")
        if self.network is not None:
            c = c.with_network(self.network.network).with_network_aliases(*self.aliases)
        for inside, outside in self.ports.items():
            # docker-py's (address, port) form; with_bind_ports takes no address.
            c.ports[f"{inside}/tcp"] = ("127.0.0.1", outside)
        return c

    @property
    def id(self) -> str:
        return self._c.get_wrapped_container().id

    def start(self) -> float:
        """Start and wait for systemd; returns seconds to `running`."""
        t0 = time.monotonic()
        self._c = self._container()
        self._c.start()
        try:
            self.wait_running()
        except Exception:
            self.stop()
            raise
        return time.monotonic() - t0

    def wait_running(self) -> str:
        """Wait until `systemctl is-system-running` says running or degraded."""
        deadline = time.monotonic() + self.boot_timeout
        state = "?"
        while time.monotonic() < deadline:
            self._c.get_wrapped_container().reload()
            status = self._c.get_wrapped_container().status
            if status in ("exited", "dead"):
                raise RuntimeError("systemd container exited during boot:\n"
                                   + self.logs()[-3000:])
            r = self.exec(["systemctl", "is-system-running"])
            state = r.output.strip()
            if state in ("running", "degraded"):
                self._check_cgroups()
                return state
            time.sleep(0.2)
        raise RuntimeError(f"systemd did not reach running in {self.boot_timeout} s "
                           f"(last state {state!r}); failed units:\n"
                           + self.exec(["systemctl", "--failed", "--no-pager"]).output)

    def _check_cgroups(self) -> None:
        # A read-only v1 hierarchy makes MemoryMax & co. silently do nothing
        # (container-init's remount failed): refuse to test on that.
        ro = self.exec(["awk", '$2 ~ "^/sys/fs/cgroup/" && $4 ~ "^ro" {print $2}',
                        "/proc/self/mounts"]).output.split()
        if ro:
            raise RuntimeError(f"cgroup hierarchies left read-only in the container: {ro}")

    def exec(self, argv: list[str], env: dict[str, str] | None = None,
             workdir: str | None = None, user: str = "") -> ExecResult:
        r = self._c.get_wrapped_container().exec_run(argv, environment=env, workdir=workdir,
                                                     user=user, demux=False)
        out = r.output.decode(errors="replace") if r.output else ""
        return ExecResult(r.exit_code, out)

    def restart(self) -> float:
        """Reboot the container (systemd goes away, then boots afresh;
        /run is a new tmpfs). Returns seconds to `running`."""
        t0 = time.monotonic()
        self._c.get_wrapped_container().restart(timeout=20)
        self.wait_running()
        return time.monotonic() - t0

    def address(self) -> str:
        """Its address on its network (D36): what the other hosts reach it at."""
        self._c.get_wrapped_container().reload()
        networks = self._c.get_wrapped_container().attrs["NetworkSettings"]["Networks"]
        return networks[self.network.network.name]["IPAddress"]

    def disconnect(self) -> None:
        """Cut it off its network, as a pulled cable (D39); its processes go on."""
        self.network.docker_network().disconnect(self.id)

    def connect(self) -> None:
        """Back on its network, with its aliases and, when Docker can, its address."""
        self.network.docker_network().connect(self.id, aliases=list(self.aliases))

    def logs(self) -> str:
        out, err = self._c.get_logs()
        return (out or b"").decode(errors="replace") + (err or b"").decode(errors="replace")

    def stop(self) -> None:
        if self._c is not None:
            try:
                self._c.stop(force=True, delete_volume=True)
            finally:
                self._c = None

    def __enter__(self) -> "SystemdContainer":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

"""Two hosts for the tests of nodes elsewhere (D36-D39), driven from this
host: two systemd containers on a Docker network of their own, each on its
own address, the server host known as `server` (the server's node `srv`,
its Fossil server listening on every address) and a build host known as
`build` (a node elsewhere, `build1`, set up by `ocx node init --server`).
Each step inside a host is tests/elsewhere/on_host.py."""
from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
from pathlib import Path

import pytest

from tests.node_system.harness import wait_for

SERVER_URL = "http://server:8080"

no_engine = os.environ.get("OCX_SYSTEMD_INNER") or (
    open("/proc/1/comm").read().strip() == "systemd" and not shutil.which("docker"))
needs_engine = pytest.mark.skipif(bool(no_engine), reason="needs a Docker engine on the host")


def on(host, *args: str, timeout_ok: bool = False) -> dict:
    done = host.exec(["/opt/ocx/venv/bin/python", "-m", "tests.elsewhere.on_host", *args], workdir="/src",
                     env={"PYTHONDONTWRITEBYTECODE": "1"})
    assert done.exit_code == 0, done.output
    return json.loads(done.output.strip().splitlines()[-1])


def put_file(host, path: str, text: str, mode: int = 0o600) -> None:
    """A file in HOST, through Docker's archive API: its text on no command line."""
    data = text.encode()
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        info = tarfile.TarInfo(os.path.basename(path))
        info.size, info.mode = len(data), mode
        tar.addfile(info, io.BytesIO(data))
    host._c.get_wrapped_container().put_archive(os.path.dirname(path), archive.getvalue())


def wait_until(check, timeout: float, what: str, every: float = 0.25):
    return wait_for(check, timeout, every, what)  # the node tests' bounded wait, in this file's argument order


class Hosts:
    def __init__(self, src: Path | None = None) -> None:
        """SRC: the tree both hosts run as /src (this one by default; bench/compare.py's other tree)."""
        from tests.container.systemd_container import REPO, Network, SystemdContainer, build_image, engine

        engine()
        image = build_image()
        self.network = Network()
        self.server = SystemdContainer(image, network=self.network, aliases=("server",), hostname="server",
                                       src=src or REPO)
        self.build = SystemdContainer(image, network=self.network, aliases=("build",), hostname="build",
                                      src=src or REPO)

    def start(self) -> dict:
        self.server.start()
        self.build.start()
        made = on(self.server, "server-init")
        put_file(self.build, "/root/admin-password", made["admin_password"] + "\n")
        built = on(self.build, "build-init", SERVER_URL, "/root/admin-password")
        return {"server_code": made["server_code"], "build_code": built["server_code"], "said": built["said"]}

    def stop(self) -> None:
        for host in (self.build, self.server):
            try:
                host.stop()
            except Exception:
                pass
        self.network.remove()

"""One real node for the node's tests, set up by `ocx node init` in the container."""
from pathlib import Path

import pytest

from .harness import Login, Node, ocx, wait_for

NAME = "nodetest"
PORT = 8191


@pytest.fixture(scope="session")
def node(tmp_path_factory) -> Node:
    from ocx.node import config as node_config
    from ocx.setup.init import admin_password_file

    ocx("node", "init", "--name", NAME, "--port", str(PORT))
    config = node_config.load(NAME)
    admin = Login("admin", admin_password_file(NAME).read_text().strip())
    running = Node(NAME, config, admin, tmp_path_factory.mktemp("node-home"))
    wait_for(lambda: _answers(config.url), 30, what="the Fossil server")
    running.runner_page(admin, env={"PROBE_SERVER": config.url.removeprefix("http://")})
    return running


def _answers(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url + "/index", timeout=2):
            return True
    except Exception:
        return False

"""What a tool call costs from anywhere: `python bench/tools_calls.py [CALLS]`.

A real `fossil server` on 127.0.0.1 running the node's page (as the tools'
tests set it up), and the same calls made three ways: on the node (the
framework with the node's repository), through the page as a caller off the
node does it (remote.py: log in, token, call), and as the `ocx` command
(a process per call). Then a push of N check-ins from a run's clone, decided
from its artifacts. Prints medians; asserts nothing.
"""
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from tests.tools.conftest import remove_state, serve_with_page  # noqa: E402

from ocx.tools.caller import Caller  # noqa: E402
from ocx.tools.credentials import Credentials  # noqa: E402
from ocx.tools.framework import run_tool  # noqa: E402
from ocx.tools.registry import TOOLS  # noqa: E402
from ocx.tools.remote import RemoteTools  # noqa: E402


def timed(call, times: int) -> float:
    spent = []
    for _ in range(times):
        began = time.perf_counter()
        call()
        spent.append(time.perf_counter() - began)
    return statistics.median(spent) * 1000


def main(calls: str = "20") -> None:
    times = int(calls)
    with tempfile.TemporaryDirectory() as base:
        served, node = serve_with_page(Path(base), "bench-tools")
        try:
            checkin = served.commit("alice", "a.txt", "one\n")
            audit = {"checkin": checkin[:12], "verdict": "pass", "reason": "r", "against": "a.txt", "dry_run": True}
            caller = Caller("bob", served.path, served.base_url, node=node, password=served.passwords["bob"])
            remote = RemoteTools(Credentials(served.base_url, "bob", served.passwords["bob"]))
            pw = Path(base) / "pw"
            pw.write_text(served.passwords["bob"] + "\n")
            cli = [str(Path(sys.executable).with_name("ocx")), "--url", served.base_url, "--login", "bob",
                   "--password-file", str(pw), "--json"]
            for name, raw in (("status", {}), ("audit", audit)):
                on_node = timed(lambda: run_tool(TOOLS[name], raw, caller), times)
                remote.call(name, raw)  # logged in once, as an MCP server stays
                by_page = timed(lambda: remote.call(name, raw), times)
                fresh = timed(lambda: RemoteTools(remote.credentials).call(name, raw), times)
                args = ["--checkin", audit["checkin"], "--verdict", "pass", "--reason", "r", "--against", "a.txt",
                        "--dry-run"] if name == "audit" else []
                by_cli = timed(lambda: subprocess.run([cli[0], name, *args, *cli[1:]], capture_output=True), max(3, times // 4))
                print(f"{name:7} on the node {on_node:7.1f} ms | through the page, in session {by_page:7.1f} ms, "
                      f"logging in {fresh:7.1f} ms | `ocx {name}` process {by_cli:7.1f} ms")
        finally:
            served.server.stop()
            remove_state(node)


if __name__ == "__main__":
    main(*sys.argv[1:])

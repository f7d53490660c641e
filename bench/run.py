"""The node benchmark, one command: `python bench/run.py [RECORDS]` from the repository's root.

On the real repository: ../shared/data/click.fossil with 20,000 forum
posts and 10,000 `audited`/`ci` verdicts sent on top by bench/history.py
(made once, about 9 minutes, and kept in /var/cache/ocx-bench). It starts
the systemd test container (as the tests do) with that file, and runs
bench/inside_real.py there: a node adopts a copy of it and every figure of
docs/node.md is printed. It asserts nothing.
"""
import hashlib
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

from tests.container.systemd_container import SystemdContainer, build_image, engine  # noqa: E402

CACHE = Path("/var/cache/ocx-bench")
INSIDE = "/bench-data"


def history() -> Path:
    """The history file for this version of bench/history.py, made if missing."""
    sys.path.insert(0, str(ROOT / "bench"))
    import history as maker

    key = hashlib.sha256(Path(maker.__file__).read_bytes() + maker.CLICK.read_bytes()).hexdigest()[:12]
    path = CACHE / f"click-history-{key}.fossil"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        began = time.monotonic()
        print(f"making {path} (once) ...", flush=True)
        maker.make(path)
        print(f"made in {time.monotonic() - began:.0f} s", flush=True)
    return path


def source() -> Path:
    """The tree the container runs as /src: this one, or OCX_BENCH_SRC's (bench/compare.py's other tree)."""
    return Path(os.environ.get("OCX_BENCH_SRC") or ROOT)


def overlay(volumes: dict[str, str]) -> dict[str, str]:
    """VOLUMES, and this tree's bench/ over the other tree's, so both trees are measured alike."""
    return {**volumes, str(ROOT / "bench"): "/src/bench"} if source() != ROOT else volumes


def compiled() -> None:
    """Bytecode for every module, as an installed node has it: the container mounts the source
    read-only, so a module without it is compiled again on every Python start (each run's steps)."""
    import compileall

    compileall.compile_dir(str(source() / "ocx"), quiet=1)


def main(records: str = "100", *parts: str) -> None:
    """PARTS: only these parts of bench/inside_real.py (for working on one figure); all by default.
    With `empty` among them, the node's repository is a new one, not click.fossil's history:
    what a run itself costs, e.g. `bench/run.py 100 empty,burst`."""
    compiled()
    parts = tuple(p for given in parts for p in given.split(",") if p)
    empty = "empty" in parts
    data = None if empty else history()
    engine()
    container = SystemdContainer(build_image(), src=ROOT, volumes={} if data is None else {str(data.parent): INSIDE})
    container.start()
    try:
        argv = ["/opt/ocx/venv/bin/python", "-u", "/src/bench/inside_real.py", "bench", "8484",
                "empty" if data is None else f"{INSIDE}/{data.name}", records,
                *([",".join(p for p in parts if p != "empty")] if parts else [])]
        result = container.exec(argv)
        print(result.output)
    finally:
        container.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])

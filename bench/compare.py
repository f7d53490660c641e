"""Before and after in one command (docs/node.md, 'Cores, a long day, before and after'):
`python bench/compare.py BASE [RECORDS] [PARTS...]`
from the repository's root.

Besides bench/inside_real.py's parts, PARTS may name `cores` (bench/cores.py's two bursts of RECORDS,
one core and two), `day` (bench/long_day.py's long day: OCX_COMPARE_DAY records, 200 by default,
figures every tenth) and `elsewhere` (bench/elsewhere.py's two hosts: OCX_COMPARE_ELSEWHERE
records, 10 by default): each runs on both trees too, in the same order, and its figures join the
table. `all` is every part, these three included.

BASE (a commit) is checked out into a git worktree of its own in a temporary directory; the
benchmark of bench/run.py (bench/inside_real.py in the systemd test container, on the same
history file) runs with that tree as /src, then with this working tree (uncommitted changes
included), back to back on the same machine. Each printed figure is paired with its own by
the text before it, and printed last as one table: BASE beside the working tree. PARTS are
bench/inside_real.py's (all by default). Both trees are measured by this working tree's bench/
(mounted over BASE's), so only OCX differs; OCX_COMPARE_BENCH=own runs BASE's own. It asserts nothing.
"""
import compileall
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

import run  # noqa: E402
from cores import history, streamed  # noqa: E402

from tests.container.systemd_container import SystemdContainer, build_image, engine  # noqa: E402

# Where a line's figure begins: after a ": " followed by a number or "median" (the last part of its key).
FIGURE = re.compile(r":\s+(?=median\b|[0-9≤~+-])")
JOURNAL_EXCERPT = re.compile(r"^[+-][0-9]")  # a journal line quoted under a figure: not a figure
ELAPSED = re.compile(r" \([0-9]+(?:\.[0-9]+)? s\)$")


def figures(output: str) -> dict[str, str]:
    """Each figure line of bench/inside_real.py's OUTPUT, keyed by the text before its figure (its
    last table by the figure's own name, the "now" column; a line with no ": " by its words, its
    numbers made #); a key seen again gets " (2)" and on."""
    found: dict[str, str] = {}
    in_traceback = False
    for raw in output.splitlines():
        line = raw.strip()
        if raw.startswith("Traceback (most recent call last)"):
            in_traceback = True
            continue
        if in_traceback and raw[:1].isspace():  # its frames: only where it stopped is a figure
            continue
        if not line or JOURNAL_EXCERPT.match(line):
            continue
        if in_traceback:
            in_traceback, key, value = False, "the benchmark stopped on", line
        elif line.startswith("|"):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            if len(cells) < 3 or cells[0] in ("figure", "---"):
                continue
            key, value = f"table: {cells[0]}", cells[2]
        elif match := FIGURE.search(line):
            key, value = line[:match.start()], line[match.end():]
        elif ": " in line:
            key, value = line.split(": ", 1)
        elif re.search(r"[0-9]", line):  # a sentence with figures inside: keyed by its shape, numbers as #
            key, value = re.sub(r"[0-9][0-9.,]*", "#", line)[:100], line
        else:
            continue
        # A checkpoint's key names when it was reached ("after 200 records (647 s)"): the tree's own
        # figure, not its name; without it the two trees' checkpoints pair.
        key = ELAPSED.sub("", key)
        named, seen = key.strip(), 2
        while named in found:
            named, seen = f"{key.strip()} ({seen})", seen + 1
        found[named] = value.strip()
    return found


def benchmark(tree: Path, data: Path, records: str, parts: tuple[str, ...]) -> str:
    """bench/inside_real.py in a container whose /src is TREE; its output. The bench/ measuring is
    this working tree's, over TREE's, so both trees are measured alike (OCX_COMPARE_BENCH=own: TREE's)."""
    compileall.compile_dir(str(tree / "ocx"), quiet=1)  # as bench/run.py does: an installed node has it
    volumes = {str(data.parent): run.INSIDE}
    if tree != ROOT and os.environ.get("OCX_COMPARE_BENCH") != "own":
        volumes[str(ROOT / "bench")] = "/src/bench"
    container = SystemdContainer(build_image(), src=tree, volumes=volumes)
    container.start()
    try:
        return streamed(container, ["/opt/ocx/venv/bin/python", "-u", "/src/bench/inside_real.py", "bench", "8484",
                                    f"{run.INSIDE}/{data.name}", records, *([",".join(parts)] if parts else [])])
    finally:
        container.stop()


def side_by_side(base: str, before: dict[str, str], after: dict[str, str]) -> str:
    def cell(text: str | None) -> str:
        return "—" if text is None else text.replace("|", "/")

    keys = list(after) + [key for key in before if key not in after]
    lines = [f"| figure | {base} | working tree |", "| --- | --- | --- |"]
    return "\n".join(lines + [f"| {cell(key)} | {cell(before.get(key))} | {cell(after.get(key))} |" for key in keys])


# Benchmarks of their own (each starts its containers), run with OCX_BENCH_SRC naming the tree.
SCRIPTS = {"cores": lambda records: ["cores.py", records],
           "day": lambda records: ["long_day.py", os.environ.get("OCX_COMPARE_DAY", "200"),
                                   str(max(1, int(os.environ.get("OCX_COMPARE_DAY", "200")) // 10))],
           "elsewhere": lambda records: ["elsewhere.py", os.environ.get("OCX_COMPARE_ELSEWHERE", "10")]}


def script(tree: Path, argv: list[str]) -> str:
    """One of SCRIPTS on TREE: its output, printed as it comes."""
    env = {**os.environ, "OCX_BENCH_SRC": str(tree)}
    done = subprocess.Popen([sys.executable, "-u", str(ROOT / "bench" / argv[0]), *argv[1:]], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in done.stdout or ():
        print(line, end="", flush=True)
        lines.append(line)
    done.wait()
    return "".join(lines)


def measured(tree: Path, data: Path, records: str, parts: tuple[str, ...]) -> str:
    """Every part asked, on TREE: inside_real.py's in one container, then each script's."""
    inside = tuple(p for p in parts if p not in SCRIPTS)
    output = benchmark(tree, data, records, inside) if inside or not parts else ""
    return output + "".join(script(tree, SCRIPTS[p](records)) for p in parts if p in SCRIPTS)


def main(base: str, records: str = "100", *parts: str) -> None:
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", f"{base}^{{commit}}"],
                            capture_output=True, text=True, check=True).stdout.strip()
    parts = tuple(q for p in parts for q in p.split(",") if q)
    if "all" in parts:
        parts = ("readers", "quiet", "hook", "ends", "deliveries", "ci", "burst", "lost", *SCRIPTS)
    data = history()
    engine()
    scratch = Path(tempfile.mkdtemp(prefix="ocx-compare-"))
    tree = scratch / commit
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), commit], check=True,
                   capture_output=True)
    try:
        loads = [os.getloadavg()[0]]
        print(f"=== {commit} (BASE) ===", flush=True)
        before = figures(measured(tree, data, records, parts))
        loads.append(os.getloadavg()[0])
        print("=== the working tree ===", flush=True)
        after = figures(measured(ROOT, data, records, parts))
        loads.append(os.getloadavg()[0])
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"\nevery figure, {commit} beside the working tree (load average before, between, after: "
          f"{', '.join(f'{x:.2f}' for x in loads)}):\n" + side_by_side(commit, before, after), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])

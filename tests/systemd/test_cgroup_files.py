"""cgroup.py and journal.py's encoding, on cgroup trees laid out in a
temporary directory as the kernel lays them out (pure: no systemd)."""

from __future__ import annotations

import struct
from pathlib import Path

from ocx.systemd import cgroup, journal
from ocx.systemd.stoppost import StopReport, read, write

CG = "/ocx.slice/ocx-a-b.service"


def lay(root: Path, files: dict[str, str]) -> str:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return str(root)


def test_hybrid_cpu_time_is_read_from_the_unified_cpu_stat(tmp_path):
    root = lay(tmp_path, {"unified/cgroup.procs": "",
                          f"unified{CG}/cpu.stat": "usage_usec 123456\nuser_usec 100000\n",
                          f"cpuacct{CG}/cpuacct.usage": "999000000\n"})
    assert cgroup.unified_root(root) == f"{root}/unified"
    assert cgroup.cpu_usage_usec(CG, root) == 123456


def test_pure_v1_falls_back_to_cpuacct(tmp_path):
    root = lay(tmp_path, {f"cpu,cpuacct{CG}/cpuacct.usage": "5000000\n"})
    assert cgroup.unified_root(root) is None
    assert cgroup.cpu_usage_usec(CG, root) == 5000


def test_pure_v2(tmp_path):
    root = lay(tmp_path, {"cgroup.controllers": "cpu memory pids\n",
                          f"{CG[1:]}/cpu.stat": "usage_usec 42\n",
                          f"{CG[1:]}/memory.events": "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n",
                          f"{CG[1:]}/memory.peak": "67108864\n"})
    assert cgroup.unified_root(root) == root
    assert cgroup.cpu_usage_usec(CG, root) == 42
    ev = cgroup.memory_evidence(CG, root)
    assert ev.oom_killed and ev.max_usage == 64 << 20 and ev.failcnt is None


def test_v1_memory_evidence(tmp_path):
    root = lay(tmp_path, {"unified/cgroup.procs": "",
                          f"memory{CG}/memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n",
                          f"memory{CG}/memory.failcnt": "417\n",
                          f"memory{CG}/memory.max_usage_in_bytes": "67108864\n"})
    assert cgroup.memory_evidence(CG, root) == cgroup.MemoryEvidence(1, 417, 64 << 20)
    lay(tmp_path, {f"memory{CG}/memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n"})
    assert not cgroup.memory_evidence(CG, root).oom_killed


def test_a_vanished_cgroup_has_no_evidence(tmp_path):
    assert cgroup.memory_evidence(CG, str(tmp_path)) is None
    assert cgroup.cpu_usage_usec(CG, str(tmp_path)) is None


def test_this_process_has_a_cgroup():
    # Any Linux process: the line for the cgroup2 hierarchy, or a v1 one.
    assert cgroup.unit_control_group() is not None or cgroup.own_control_group("self", "memory")


def test_stop_report_round_trips(tmp_path):
    r = StopReport("signal", "killed", "KILL", CG, 1234, cgroup.MemoryEvidence(1, 5, 6))
    write(r, str(tmp_path / "r.json"))
    assert read(str(tmp_path / "r.json")) == r and r.oom_killed
    r2 = StopReport("success", "exited", "0", None, None, None)
    write(r2, str(tmp_path / "r2.json"))
    assert read(str(tmp_path / "r2.json")) == r2 and not r2.oom_killed


def test_journal_native_encoding():
    assert journal.encode({"MESSAGE": "hi", "OCX_RECORD": "ab"}) == b"MESSAGE=hi\nOCX_RECORD=ab\n"
    two = "a\nb"
    assert journal.encode({"MESSAGE": two}) == b"MESSAGE\n" + struct.pack("<Q", 3) + b"a\nb\n"


def test_journal_field_names_are_checked():
    for bad in ("lower", "_TRUSTED", "A-B"):
        try:
            journal.send("x", socket_path="/nonexistent", **{bad: "1"})
        except journal.JournalError as e:
            assert "field name" in str(e)
        else:
            raise AssertionError(bad)

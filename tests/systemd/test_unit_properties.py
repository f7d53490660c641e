"""The pure parts of ocx.systemd: no bus, no systemd; they run anywhere."""

from __future__ import annotations

import signal

import pytest
from dbus_next import Variant
from hypothesis import given, strategies as st

from ocx.systemd.bus import variants
from ocx.systemd.units import (MS_REC, SERVICE_IFACE, UNIT_IFACE, BindPath, End,
                               EndTracker, ExecCommand, TransientService, UnitError,
                               cause, properties, unit_path)

NAME = "ocx-0123456789ab-ba9876543210.service"


def props(**kw) -> dict:
    kw.setdefault("name", NAME)
    kw.setdefault("argv", ["/bin/true"])
    out = properties(TransientService(**kw))
    return {n: (sig, v) for n, sig, v in out}


def assert_marshals(p: list) -> None:
    """Every value fits its signature, as dbus-next checks it (no bus)."""
    for name, sig, value in p:
        Variant(sig, value if sig != "h" else 0)
    body, _ = variants(p)
    Variant("a(sv)", body)


def test_a_minimal_service_is_a_simple_run_in_ocx_slice():
    p = props()
    assert p["Description"] == ("s", NAME)
    assert p["Slice"] == ("s", "ocx.slice")                  # D3
    assert p["ExecStart"] == ("a(sasb)", [["/bin/true", ["/bin/true"], False]])
    assert p["AddRef"] == ("b", True)
    assert p["CollectMode"] == ("s", "inactive-or-failed")
    assert p["CPUAccounting"] == ("b", True)
    for absent in ("MemoryMax", "TasksMax", "RuntimeMaxUSec", "User", "DynamicUser",
                   "ProtectSystem", "PrivateNetwork", "Environment"):
        assert absent not in p


def test_budgets_map_to_systemd_d17():
    p = props(memory_max=512 * 1024**2, tasks_max=64, runtime_max_sec=7200,
              cpu_quota=1.5)
    assert p["MemoryMax"] == ("t", 512 * 1024**2)
    assert p["MemorySwapMax"] == ("t", 0)                    # "and no swap"
    assert p["TasksMax"] == ("t", 64)
    assert p["RuntimeMaxUSec"] == ("t", 7_200_000_000)
    assert p["CPUQuotaPerSecUSec"] == ("t", 1_500_000)


def test_an_explicit_swap_limit_is_kept():
    assert props(memory_max=100, memory_swap_max=50)["MemorySwapMax"] == ("t", 50)
    assert props(memory_swap_max=0)["MemorySwapMax"] == ("t", 0)


def test_the_sandbox_d16():
    p = props(protect_system="strict", private_network=True, private_tmp=True,
              read_only_paths=["/srv/ro"], read_write_paths=["/srv/rw"],
              inaccessible_paths=["-/var/lib/ocx"], state_directory=["runs/abc"],
              bind_paths=[BindPath("/run/ocx/sock/abc", "/run/ocx-tools"),
                          BindPath("/opt/home", read_only=True, ignore_missing=True)],
              dynamic_user=True, working_directory="/var/lib/runs/abc")
    assert p["ProtectSystem"] == ("s", "strict")
    assert p["PrivateNetwork"] == ("b", True) and p["PrivateTmp"] == ("b", True)
    assert p["ReadOnlyPaths"] == ("as", ["/srv/ro"])
    assert p["ReadWritePaths"] == ("as", ["/srv/rw"])
    assert p["InaccessiblePaths"] == ("as", ["-/var/lib/ocx"])
    assert p["StateDirectory"] == ("as", ["runs/abc"])
    assert p["BindPaths"] == ("a(ssbt)", [["/run/ocx/sock/abc", "/run/ocx-tools", False, MS_REC]])
    assert p["BindReadOnlyPaths"] == ("a(ssbt)", [["/opt/home", "/opt/home", True, MS_REC]])
    assert p["DynamicUser"] == ("b", True)
    assert p["WorkingDirectory"] == ("s", "/var/lib/runs/abc")


def test_a_runtime_directory_of_the_units_own_d32():
    p = props(runtime_directory=["ocx-runs/abc"], runtime_directory_mode=0o700)
    assert p["RuntimeDirectory"] == ("as", ["ocx-runs/abc"])
    assert p["RuntimeDirectoryMode"] == ("u", 0o700)
    assert_marshals(properties(TransientService(name=NAME, argv=["/bin/true"], runtime_directory=["a/b"],
                                                runtime_directory_mode=0o700)))


def test_environment_is_a_list_of_assignments_d15():
    p = props(environment={"HOME": "/w", "LANG": "C.UTF-8", "X": "a=b"})
    assert p["Environment"] == ("as", ["HOME=/w", "LANG=C.UTF-8", "X=a=b"])


def test_user_and_group():
    p = props(user="alice", group="ocx")
    assert p["User"] == ("s", "alice") and p["Group"] == ("s", "ocx")


def test_stop_post_plain_and_privileged_d4():
    plain = ExecCommand(["/usr/bin/env", "true"])
    assert props(exec_stop_post=[plain])["ExecStopPost"] == (
        "a(sasb)", [["/usr/bin/env", ["/usr/bin/env", "true"], False]])
    priv = ExecCommand(["/opt/ocx/venv/bin/python", "-m", "x"], privileged=True)
    p = props(exec_stop_post=[priv, ExecCommand(["/bin/true"], ignore_failure=True)])
    assert "ExecStopPost" not in p
    assert p["ExecStopPostEx"] == ("a(sasas)", [
        ["/opt/ocx/venv/bin/python", ["/opt/ocx/venv/bin/python", "-m", "x"], ["privileged"]],
        ["/bin/true", ["/bin/true"], ["ignore-failure"]]])


def test_start_pre_privileged_and_its_timeout():
    prepare = ExecCommand(["/opt/ocx/venv/bin/python", "-m", "ocx.run_steps.prepare"], privileged=True)
    p = props(exec_start_pre=[prepare], timeout_start_sec=600)
    assert p["ExecStartPreEx"] == ("a(sasas)", [
        ["/opt/ocx/venv/bin/python", ["/opt/ocx/venv/bin/python", "-m", "ocx.run_steps.prepare"], ["privileged"]]])
    assert p["TimeoutStartUSec"] == ("t", 600_000_000)
    assert "ExecStartPre" not in props() and "TimeoutStartUSec" not in props()


def test_exec_path_may_differ_from_argv0():
    p = props(argv=["/bin/true"], exec_stop_post=[ExecCommand(["sh", "-c", "x"], path="/bin/sh")])
    assert p["ExecStopPost"][1] == [["/bin/sh", ["sh", "-c", "x"], False]]


def test_standard_streams_by_name_or_fd():
    p = props(standard_input="null", standard_output="journal", standard_error=7)
    assert p["StandardInput"] == ("s", "null")
    assert p["StandardOutput"] == ("s", "journal")
    assert p["StandardErrorFileDescriptor"] == ("h", 7)
    assert "StandardError" not in p
    assert props(standard_output="append:/var/log/x")["StandardOutput"] == ("s", "append:/var/log/x")


def test_fds_become_indexes_into_unix_fds():
    p = properties(TransientService(name=NAME, argv=["/bin/cat"],
                                    standard_input=11, standard_output=12))
    body, fds = variants(p)
    assert fds == [11, 12]
    by = {n: v for n, v in body}
    assert by["StandardInputFileDescriptor"] == Variant("h", 0)
    assert by["StandardOutputFileDescriptor"] == Variant("h", 1)


def test_tty_kill_mode_and_stop_timeout():
    p = props(tty_path="/dev/pts/3", standard_input="tty", kill_mode="mixed",
              timeout_stop_sec=2.5, type="exec")
    assert p["TTYPath"] == ("s", "/dev/pts/3") and p["StandardInput"] == ("s", "tty")
    assert p["KillMode"] == ("s", "mixed") and p["TimeoutStopUSec"] == ("t", 2_500_000)
    assert p["Type"] == ("s", "exec")


def test_add_ref_and_collect_mode_can_be_turned_off():
    p = props(add_ref=False, collect_mode=None, accounting=False, slice=None)
    for absent in ("AddRef", "CollectMode", "CPUAccounting", "Slice"):
        assert absent not in p


def test_extra_properties_pass_through_but_not_twice():
    assert props(extra=[("Nice", "i", 5)])["Nice"] == ("i", 5)
    with pytest.raises(UnitError, match="twice"):
        props(extra=[("Slice", "s", "other.slice")])


def test_values_are_lists_never_tuples():
    # dbus-next marshals arrays from lists only (notes).
    p = properties(TransientService(name=NAME, argv=("/bin/echo", "hi"),
                                    read_only_paths=("/a",), state_directory=("s",),
                                    exec_stop_post=(ExecCommand(("/bin/true",)),)))

    def no_tuples(v):
        assert not isinstance(v, tuple), v
        if isinstance(v, list):
            for x in v:
                no_tuples(x)
    for _, _, v in p:
        no_tuples(v)
    assert_marshals(p)


@pytest.mark.parametrize("kw,field", [
    ({"name": "ocx-x"}, "name"),
    ({"name": "ocx x.service"}, "name"),
    ({"name": "ocx-x.slice"}, "name"),
    ({"argv": []}, "argv"),
    ({"argv": ["true"]}, "ExecStart"),
    ({"user": "a", "dynamic_user": True}, "user"),
    ({"slice": "ocx"}, "slice"),
    ({"memory_max": 0}, "memory_max"),
    ({"memory_max": -1}, "memory_max"),
    ({"memory_max": True}, "memory_max"),
    ({"tasks_max": 0}, "tasks_max"),
    ({"memory_swap_max": -5}, "memory_swap_max"),
    ({"runtime_max_sec": 0}, "runtime_max_sec"),
    ({"cpu_quota": 0}, "cpu_quota"),
    ({"protect_system": "maybe"}, "protect_system"),
    ({"read_only_paths": ["relative"]}, "read_only_paths"),
    ({"read_write_paths": ["-rel"]}, "read_write_paths"),
    ({"inaccessible_paths": ["x/y"]}, "inaccessible_paths"),
    ({"bind_paths": [BindPath("rel")]}, "bind_paths"),
    ({"bind_paths": [BindPath("/a", "rel")]}, "bind_paths"),
    ({"state_directory": ["/abs"]}, "state_directory"),
    ({"state_directory": ["runs/../x"]}, "state_directory"),
    ({"runtime_directory": ["/run/x"]}, "runtime_directory"),
    ({"runtime_directory_mode": 0o10000}, "runtime_directory_mode"),
    ({"working_directory": "w"}, "working_directory"),
    ({"environment": {"A=B": "c"}}, "environment"),
    ({"environment": {"": "c"}}, "environment"),
    ({"standard_input": "nonsense"}, "StandardInput"),
    ({"standard_output": -1}, "StandardOutput"),
    ({"standard_error": True}, "StandardError"),
    ({"exec_stop_post": [ExecCommand([])]}, "ExecStopPost"),
])
def test_what_systemd_would_refuse_is_refused_naming_the_field(kw, field):
    with pytest.raises(UnitError, match=field):
        props(**kw)


paths = st.lists(st.from_regex(r"\A/[a-z0-9/_.-]{0,20}\Z"), max_size=4)


@given(memory=st.none() | st.integers(1, 2**40), tasks=st.none() | st.integers(1, 10**6),
       wall=st.none() | st.integers(1, 10**7), quota=st.none() | st.floats(0.01, 64),
       ro=paths, rw=paths, env=st.dictionaries(st.from_regex(r"\A[A-Z_][A-Z0-9_]{0,8}\Z"),
                                               st.text(max_size=20), max_size=4),
       net=st.booleans(), dyn=st.booleans())
def test_any_valid_description_marshals(memory, tasks, wall, quota, ro, rw, env, net, dyn):
    p = properties(TransientService(
        name=NAME, argv=["/bin/sh", "-c", "exit 0"], memory_max=memory, tasks_max=tasks,
        runtime_max_sec=wall, cpu_quota=quota, read_only_paths=ro, read_write_paths=rw,
        environment=env, private_network=net, dynamic_user=dyn, protect_system="strict",
        exec_stop_post=[ExecCommand(["/bin/true"], privileged=True)]))
    assert_marshals(p)
    names = [n for n, _, _ in p]
    assert len(names) == len(set(names))
    d = {n: v for n, _, v in p}
    if wall is not None:
        assert d["RuntimeMaxUSec"] == wall * 1_000_000
    if memory is not None:
        assert d["MemoryMax"] == memory and d["MemorySwapMax"] == 0


# --- object paths -----------------------------------------------------------

def test_unit_path_escapes_like_systemd():
    assert unit_path("ocx-ab.service") == "/org/freedesktop/systemd1/unit/ocx_2dab_2eservice"
    assert unit_path("a_b@1.service").endswith("/a_5fb_401_2eservice")


# --- ends ---------------------------------------------------------------------

def feed(tracker: EndTracker, *events):
    end = None
    for iface, changed in events:
        end = tracker.feed(iface, changed)
    return end


STALE = [(SERVICE_IFACE, {"Result": "success", "ExecMainCode": 0, "ExecMainStatus": 0}),
         (UNIT_IFACE, {"ActiveState": "inactive", "SubState": "dead"})]


def test_the_stale_inactive_pair_before_active_is_not_an_end():
    t = EndTracker("u.service")
    assert feed(t, *STALE) is None
    assert feed(t, (UNIT_IFACE, {"ActiveState": "active", "SubState": "running"})) is None
    end = feed(t, (SERVICE_IFACE, {"Result": "exit-code", "ExecMainCode": 1, "ExecMainStatus": 3}),
               (UNIT_IFACE, {"ActiveState": "failed", "SubState": "failed"}))
    assert end == End("u.service", "exit-code", "exited", 3, "failed")


def test_a_kill_is_a_signal_with_its_number():
    t = EndTracker("u.service")
    end = feed(t, *STALE, (UNIT_IFACE, {"ActiveState": "active"}),
               (SERVICE_IFACE, {"Result": "signal", "ExecMainCode": 2, "ExecMainStatus": 9}),
               (UNIT_IFACE, {"ActiveState": "failed"}))
    assert (end.code, end.status, end.signal_name) == ("killed", 9, "SIGKILL")


def test_the_end_is_frozen_at_the_transition():
    # ResetFailed re-emits Result=success afterwards (notes).
    t = EndTracker("u.service")
    end = feed(t, (UNIT_IFACE, {"ActiveState": "activating"}),
               (SERVICE_IFACE, {"Result": "timeout", "ExecMainCode": 2, "ExecMainStatus": 15}),
               (UNIT_IFACE, {"ActiveState": "failed"}),
               (SERVICE_IFACE, {"Result": "success"}),
               (UNIT_IFACE, {"ActiveState": "inactive"}))
    assert end.result == "timeout" and end.active_state == "failed"


def test_a_stop_post_phase_is_not_the_end():
    t = EndTracker("u.service")
    assert feed(t, (UNIT_IFACE, {"ActiveState": "active"}),
                (UNIT_IFACE, {"ActiveState": "deactivating", "SubState": "stop-post"})) is None
    assert feed(t, (UNIT_IFACE, {"ActiveState": "inactive"})).active_state == "inactive"


def test_other_properties_and_interfaces_are_ignored():
    t = EndTracker("u.service")
    assert feed(t, ("org.freedesktop.systemd1.Scope", {"ActiveState": "failed"}),
                (UNIT_IFACE, {"SubState": "dead"})) is None
    assert t.started is False


@pytest.mark.parametrize("end,oom,expected", [
    (End("u", "success", "exited", 0), None, "exit"),
    (End("u", "exit-code", "exited", 3), None, "exit"),
    (End("u", "timeout", "killed", 15), None, "timeout"),
    (End("u", "oom-kill", "killed", 9), None, "memory"),            # cgroup v2
    (End("u", "signal", "killed", 9), True, "memory"),              # v1 + evidence
    (End("u", "signal", "killed", 9), False, "signal"),
    (End("u", "signal", "killed", 15), True, "signal"),
    (End("u", "signal", "dumped", 11), None, "signal"),
    (End("u", "exit-code", "exited", 203), None, "exit"),
    (End("u", "resources", None, None), None, "failed"),
])
def test_cause(end, oom, expected):
    assert cause(end, oom) == expected


def test_signal_name_of_an_unknown_number():
    assert End("u", "signal", "killed", 99).signal_name == "99"
    assert End("u", "signal", "killed", int(signal.SIGTERM)).signal_name == "SIGTERM"
    assert End("u", "success", "exited", 0).signal_name is None

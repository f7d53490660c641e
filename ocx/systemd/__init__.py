"""OCX's systemd layer: the only code that talks to D-Bus or the journal or
reads a unit's cgroup (docs/architecture.md, docs/systemd.md).

- units:    TransientService, properties() (pure), End, EndTracker, cause()
- manager:  Systemd (connect, run, start, stop, kill, state, cpu_usec, …), Run
- bus:      the system bus and systemd's Manager, low level (dbus-next)
- cgroup:   CPU time and memory evidence from /sys/fs/cgroup
- stoppost: the privileged ExecStopPost that records a unit's end (D4)
- journal:  lines with OCX's fields to the journal
- journal_tail: the last lines a unit printed, read back (journalctl)
- sd_bus:   many units' properties at once over libsystemd's sd-bus (ctypes),
            read-only, for the page's console (D30)
- unit_figures: each running unit's state, start, CPU, memory and processes

Nothing is imported here, so `import ocx.systemd.units` stays light (D5).
"""

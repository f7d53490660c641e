"""A run's privileged steps: what systemd runs for one run, outside its sandbox (C5, D4, D16, D19).

Run by:  each run's transient unit: prepare.py as its ExecStartPre (`+`, in the unit's network
         namespace), stop_step.py as its ExecStopPost; cpu_watch.py by the run's cpu timer (D17).
As:      root.
Reads:   the record's directory in the node's state, the node's clone for runs (template.py),
         the served repository through Fossil; what a run wrote only through ocx/node/bounded.py (D41).
Writes:  the run's home before it starts (its clone, checkout, runner homes), the run user's
         letters and password, the record's marks through its store, node/record_store.py
         (prepared-STEM or unprepared-STEM, the end's facts), cpu-STEM; a poke on the node's socket.
Imports: the standard library, ocx/fossil and the light shared modules: it starts fast.
"""

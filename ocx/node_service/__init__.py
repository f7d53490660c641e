"""The node's root service: every record from receipt to response (C3, C4, D2, D26, D27).

Run by:  ocx-node@NAME.service (`ocx node serve NAME`: started by its socket or by
         ocx-wake@NAME, then up) and ocx-check@NAME.service (`ocx node check NAME`, D6).
As:      root.
Reads:   the node's configuration and state directory, the served repository (read-only),
         systemd over D-Bus and the journal; what a run wrote only through ocx/node/bounded.py (D41).
Writes:  its records' directories and marks (through ocx/node/record_store.py), responses as the
         node user, run users' letters and passwords (D19), runs' transient units.
Imports: the shared layer; of another process only ocx/run_steps (a run without network is
         prepared here, D34; the steps' command lines are built here).

Its way: serve.py waits and runs passes; intake.py is one pass; tend.py takes each record to
its next step; start_stop.py and checkin_runs.py run units (run_units.py describes them);
ocx/node/run_end.py tells how one ended; respond.py answers.
"""

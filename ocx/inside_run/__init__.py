"""What runs inside a run's unit, as its user: the feeder, the relay, the terminal (D13, D14, D32).

Run by:  a run's transient unit: its main process (`python -I -S -c … ocx.inside_run.feeder`); the
         relay is a runner page's program (`python -I -m ocx.inside_run.relay`).
As:      the run's dynamic user, in its sandbox (D16).
Reads:   its inbox (read-only), its home, its environment.
Writes:  its home, its terminal socket, the program's input; nothing of the node's.
Imports: the standard library, ocx.protocol, and the standard-library-only ocx.node.host_paths
         and ocx.node.inotify (tests/guards/test_processes.py). Root never imports this package.
"""

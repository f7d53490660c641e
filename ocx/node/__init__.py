"""The node's shared layer: what several of its processes use (architecture.md).

Its configuration and host paths (config, host_paths, run_layout), the record store
(record_store, its table states, record_dirs) and a run's end told (run_end), the served
repository's facts (served, arrivals, admit, runner_pages, serving/), runs' homes (spare,
template, runner_homes; bounded, root's one reader of what a run wrote, D41), the link to a
server (server_link), socket_served, wake, inotify, faults, cut, activity. It imports no
process package.
"""

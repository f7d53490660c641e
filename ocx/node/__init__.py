"""The node's shared layer: what several of its processes use (architecture.md).

Its configuration and host paths (config, host_paths, run_layout), the record store
(record_dirs, marks, states), the served repository's facts (served, arrivals, admit,
runner_pages, serving/), runs' homes (spare, template, runner_homes; bounded, root's one
reader of what a run wrote, D41), the link to a server (server_link), socket_served, wake,
inotify, faults, cut, activity. It imports no process package.
"""

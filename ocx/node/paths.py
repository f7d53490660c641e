"""Where a node keeps things on its host; standard library only, for the light steps."""
CONFIG_DIR = "/etc/ocx"
STATE_ROOT = "/var/lib/ocx"
RUNTIME_ROOT = "/run/ocx"
# The runs' own home directories: systemd's StateDirectory (D16) below /var/lib.
RUNS_STATE_DIRECTORY = "ocx-runs"

"""Where a node keeps things on its host; standard library only, for the light steps."""
CONFIG_DIR = "/etc/ocx"
STATE_ROOT = "/var/lib/ocx"
RUNTIME_ROOT = "/run/ocx"
# The runs' own home directories: systemd's StateDirectory (D16) below /var/lib.
RUNS_STATE_DIRECTORY = "ocx-runs"


def socket_path(node: str) -> str:
    """The node service's socket (units/ocx-node@.socket): every poke goes here (D4, D27)."""
    return f"{RUNTIME_ROOT}/{node}/node.sock"
# The names of the environment a session's program keeps (D15): set by the
# unit's description (service/sessions.py), read by the feeder inside the run.
KEEP_ENVIRONMENT = "OCX_KEEP_ENVIRONMENT"

"""The kernel-facing sandbox every run's unit gets, beyond D16's files (docs/security.md, 'The unit's sandbox').

One description for sessions and `command` runs alike; docs/security.md
("The unit's sandbox") gives each setting's reason and what was left off
and why. The privileged steps (`+`: the preparation, the stop step) run
outside all of it but the cgroup, its network namespace and its egress
filter: they read and write as root, and clone from the Fossil server.
"""
from __future__ import annotations

import errno

from ..systemd.hardening import Hardening

# Cloud metadata services and every other link-local peer: 169.254.169.254 (AWS, GCP, Azure,
# Oracle…) is link-local, as is fe80::/10; AWS's IPv6 endpoint and Alibaba's are not.
METADATA = ("169.254.0.0/16", "fe80::/10", "fd00:ec2::254/128", "100.100.100.200/32")
# A run, not the node or its Fossil server, is what the kernel's OOM killer takes first.
RUN_OOM_SCORE_ADJUST = 500


def run_hardening(network: bool, egress_filter: str | None) -> Hardening:
    """EGRESS_FILTER: the pinned loopback program (ocx.systemd.loopback_filter); a run
    with network is never described without it: a run on the host's network unfiltered is no run of ours."""
    if network and not egress_filter:
        raise ValueError("a run with network needs its loopback filter")
    return Hardening(
        capability_bounding_set=0,
        ambient_capabilities=0,
        no_new_privileges=True,
        system_call_filter=["@system-service"],
        system_call_deny=["@privileged", "@resources"],
        system_call_error=errno.EPERM,  # a refused call fails; it does not kill the agent
        system_call_architectures=["native"],
        restrict_namespaces=True,
        # A run without network has only its own loopback (PrivateNetwork); AF_UNIX for its sockets.
        restrict_address_families=["AF_UNIX", "AF_INET", "AF_INET6"] if network else ["AF_UNIX"],
        # PrivateUsers is left off: every run's user namespace would count its inotify instances
        # and watches against root's own limit (the kernel's ucounts are hierarchical), so runs
        # together could exhaust systemd's and the node's: docs/security.md.
        private_devices=True,
        private_ipc=True,
        protect_kernel_tunables=True,
        protect_kernel_modules=True,
        protect_kernel_logs=True,
        protect_control_groups=True,
        protect_clock=True,
        protect_hostname=True,
        protect_proc="invisible",
        proc_subset="pid",
        lock_personality=True,
        restrict_realtime=True,
        restrict_suid_sgid=True,
        remove_ipc=True,
        umask=0o077,
        keyring_mode="private",
        device_policy="closed",
        ip_address_deny=METADATA if network else (),
        ip_egress_filter_path=[egress_filter] if network and egress_filter else (),
        oom_score_adjust=RUN_OOM_SCORE_ADJUST,
    )

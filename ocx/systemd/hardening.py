"""The kernel-facing sandbox of a transient service, as systemd 252 sets it.

Pure, like units.py: `Hardening` names each of systemd's sandboxing
settings a run gets (docs/security.md, "The unit's sandbox", gives each
one's reason) and `properties()` turns it into StartTransientUnit's
(name, signature, value) triples. A field left at its default adds
nothing, so a unit that names no hardening is described as before.

D-Bus shapes worth knowing (systemd's dbus-execute.c / dbus-cgroup.c):
- CapabilityBoundingSet and AmbientCapabilities are masks (`t`); 0 is empty.
- RestrictNamespaces is the mask of namespaces *allowed* (`t`): 0 allows none.
- SystemCallFilter and RestrictAddressFamilies are `(bas)`: (allow-list?, names).
  SystemCallFilter may be sent more than once: an allow list, then a deny
  list (False) that removes names from it, as `~@privileged` does in a unit file.
- IPAddressAllow/Deny are `a(iayu)`: (AF_INET or AF_INET6, address bytes, prefix).
"""
from __future__ import annotations

import errno
import ipaddress
import socket
from collections.abc import Sequence
from dataclasses import dataclass

from .errors import Property, UnitError

_PROTECT_PROC = ("default", "noaccess", "invisible", "ptraceable")
_PROC_SUBSET = ("all", "pid")
_KEYRING = ("inherit", "private", "shared")
_DEVICE_POLICY = ("auto", "closed", "strict")
_FAMILIES = {"AF_UNIX", "AF_INET", "AF_INET6", "AF_NETLINK", "AF_PACKET"}


@dataclass(frozen=True)
class Hardening:
    """systemd's sandboxing settings of one unit; None or False adds nothing."""

    capability_bounding_set: int | None = None       # 0: no capability at all, even for root
    ambient_capabilities: int | None = None
    no_new_privileges: bool = False
    system_call_filter: Sequence[str] = ()           # an allow list, e.g. ["@system-service"]
    system_call_deny: Sequence[str] = ()             # removed from it, e.g. ["@privileged"]
    system_call_error: int | None = None             # errno for a denied call (else SIGSYS kills)
    system_call_architectures: Sequence[str] = ()    # ["native"]
    restrict_namespaces: bool = False                # no new namespace of any kind
    restrict_address_families: Sequence[str] = ()    # the allow list
    private_users: bool = False
    private_devices: bool = False
    private_ipc: bool = False
    protect_kernel_tunables: bool = False
    protect_kernel_modules: bool = False
    protect_kernel_logs: bool = False
    protect_control_groups: bool = False
    protect_clock: bool = False
    protect_hostname: bool = False
    protect_proc: str | None = None                  # "invisible"
    proc_subset: str | None = None                   # "pid"
    lock_personality: bool = False
    restrict_realtime: bool = False
    restrict_suid_sgid: bool = False
    remove_ipc: bool = False
    memory_deny_write_execute: bool = False          # breaks JITs (V8): docs/security.md
    umask: int | None = None                         # e.g. 0o077
    keyring_mode: str | None = None                  # "private"
    device_policy: str | None = None                 # "closed"
    ip_address_allow: Sequence[str] = ()             # CIDR ("127.0.0.1/32") or "any"
    ip_address_deny: Sequence[str] = ()
    ip_egress_filter_path: Sequence[str] = ()        # pinned cgroup-skb programs (bpffs)
    oom_score_adjust: int | None = None              # -1000..1000; a run may only raise its own


def _address(label: str, text: str) -> list[list[int | bytes]]:
    """One IPAddressAllow/Deny entry as (family, bytes, prefix) items; `any` is both families' /0."""
    if text == "any":
        return [[socket.AF_INET, bytes(4), 0], [socket.AF_INET6, bytes(16), 0]]
    try:
        net = ipaddress.ip_network(text, strict=True)
    except ValueError as error:
        raise UnitError(f"{label}: {text!r} is not an address prefix ({error})") from None
    family = socket.AF_INET if net.version == 4 else socket.AF_INET6
    return [[family, net.network_address.packed, net.prefixlen]]


def _choice(label: str, value: str | None, allowed: Sequence[str]) -> None:
    if value is not None and value not in allowed:
        raise UnitError(f"{label}: {value!r} is not one of {', '.join(allowed)}")


def properties(h: Hardening) -> list[Property]:
    """The StartTransientUnit properties of `h`. Pure; raises UnitError."""
    _choice("protect_proc", h.protect_proc, _PROTECT_PROC)
    _choice("proc_subset", h.proc_subset, _PROC_SUBSET)
    _choice("keyring_mode", h.keyring_mode, _KEYRING)
    _choice("device_policy", h.device_policy, _DEVICE_POLICY)
    unknown = set(h.restrict_address_families) - _FAMILIES
    if unknown:
        raise UnitError(f"restrict_address_families: {sorted(unknown)} not known here")
    if h.system_call_deny and not h.system_call_filter:
        raise UnitError("system_call_deny: only narrows a system_call_filter allow list")
    if h.umask is not None and not 0 <= h.umask <= 0o777:
        raise UnitError(f"umask: {h.umask!r} is not a file mode mask")
    if h.oom_score_adjust is not None and not -1000 <= h.oom_score_adjust <= 1000:
        raise UnitError(f"oom_score_adjust: {h.oom_score_adjust!r} is outside -1000..1000")
    if h.system_call_error is not None and h.system_call_error not in errno.errorcode:
        raise UnitError(f"system_call_error: {h.system_call_error!r} is not an errno")
    for path in h.ip_egress_filter_path:
        if not path.startswith("/sys/fs/bpf/"):
            raise UnitError(f"ip_egress_filter_path: {path!r} is not a program pinned in /sys/fs/bpf")

    props: list[Property] = []
    for name, value in (("CapabilityBoundingSet", h.capability_bounding_set),
                        ("AmbientCapabilities", h.ambient_capabilities)):
        if value is not None:
            props.append((name, "t", int(value)))
    flags = (("NoNewPrivileges", h.no_new_privileges), ("PrivateUsers", h.private_users),
             ("PrivateDevices", h.private_devices), ("PrivateIPC", h.private_ipc),
             ("ProtectKernelTunables", h.protect_kernel_tunables),
             ("ProtectKernelModules", h.protect_kernel_modules),
             ("ProtectKernelLogs", h.protect_kernel_logs),
             ("ProtectControlGroups", h.protect_control_groups), ("ProtectClock", h.protect_clock),
             ("ProtectHostname", h.protect_hostname), ("LockPersonality", h.lock_personality),
             ("RestrictRealtime", h.restrict_realtime), ("RestrictSUIDSGID", h.restrict_suid_sgid),
             ("RemoveIPC", h.remove_ipc), ("MemoryDenyWriteExecute", h.memory_deny_write_execute))
    props += [(name, "b", True) for name, on in flags if on]
    if h.system_call_filter:
        props.append(("SystemCallFilter", "(bas)", [True, list(h.system_call_filter)]))
    if h.system_call_deny:
        props.append(("SystemCallFilter", "(bas)", [False, list(h.system_call_deny)]))
    if h.system_call_error is not None:
        props.append(("SystemCallErrorNumber", "i", int(h.system_call_error)))
    if h.system_call_architectures:
        props.append(("SystemCallArchitectures", "as", list(h.system_call_architectures)))
    if h.restrict_namespaces:
        props.append(("RestrictNamespaces", "t", 0))
    if h.restrict_address_families:
        props.append(("RestrictAddressFamilies", "(bas)", [True, list(h.restrict_address_families)]))
    for name, text in (("ProtectProc", h.protect_proc), ("ProcSubset", h.proc_subset),
                       ("KeyringMode", h.keyring_mode), ("DevicePolicy", h.device_policy)):
        if text is not None:
            props.append((name, "s", text))
    if h.umask is not None:
        props.append(("UMask", "u", int(h.umask)))
    for name, label, entries in (("IPAddressAllow", "ip_address_allow", h.ip_address_allow),
                                 ("IPAddressDeny", "ip_address_deny", h.ip_address_deny)):
        if entries:
            props.append((name, "a(iayu)", [item for text in entries for item in _address(label, text)]))
    if h.ip_egress_filter_path:
        props.append(("IPEgressFilterPath", "as", list(h.ip_egress_filter_path)))
    if h.oom_score_adjust is not None:
        props.append(("OOMScoreAdjust", "i", int(h.oom_score_adjust)))
    return props

"""What the systemd layer raises: one family, under OCX's one base (protocol/errors.py)."""
from __future__ import annotations

from ..protocol.errors import OcxError


class SystemdLayerError(OcxError):
    """systemd, D-Bus, the journal or the kernel (bpf) refused or could not be asked;
    each class below says which. Whether one passes by itself: bus.passes (issue 13)."""

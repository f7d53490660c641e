"""Just enough eBPF to give systemd a cgroup egress program (IPEgressFilterPath=).

`Assembler` writes raw instructions with named jump targets (pure); `load`
hands them to the kernel with the bpf() system call and `pin` names the
program in the BPF file system, where systemd opens it when a unit that
names it starts. No libbpf, no compiler: the program is a few dozen
instructions, and systemd 252 here is built without its BPF framework.
"""
from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
from dataclasses import dataclass, field

from .errors import SystemdLayerError

BPFFS = "/sys/fs/bpf"
PROG_TYPE_CGROUP_SKB = 8
CGROUP_INET_EGRESS = 1
_PROG_LOAD, _OBJ_PIN, _OBJ_GET = 5, 6, 7
_SYSCALL = {"x86_64": 321, "aarch64": 280}
_BPF_FS_MAGIC = 0xCAFE4A11

# Instruction classes, sizes, modes, operations (linux/bpf_common.h, linux/bpf.h).
LDX, STX, JMP, JMP32, ALU64 = 0x01, 0x03, 0x05, 0x06, 0x07
W, H, B, DW = 0x00, 0x08, 0x10, 0x18
MEM = 0x60
K, X = 0x00, 0x08
ADD, AND, LSH, MOV = 0x00, 0x50, 0x60, 0xB0
JA, JEQ, JNE, JLT, CALL, EXIT = 0x00, 0x10, 0x50, 0xA0, 0x80, 0x90
FP = 10  # the frame pointer: r10, read-only

# Helper functions by number (the order of __BPF_FUNC_MAPPER).
SKB_LOAD_BYTES, SKB_CGROUP_ID, SK_LOOKUP_TCP, SK_LOOKUP_UDP, SK_RELEASE, SK_CGROUP_ID = 26, 79, 84, 85, 86, 128


def _insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    return struct.pack("<BBhi", code, dst | (src << 4), off, imm)


@dataclass
class Assembler:
    """Instructions in order; jumps name a label, resolved by `assemble()`."""

    items: list[tuple[int, int, int, int, int | str]] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)

    def emit(self, code: int, dst: int = 0, src: int = 0, off: int | str = 0, imm: int = 0) -> None:
        self.items.append((code, dst, src, imm, off))

    def label(self, name: str) -> None:
        if name in self.labels:
            raise ValueError(f"label {name} set twice")
        self.labels[name] = len(self.items)

    # The few shapes the programs here need.
    def mov(self, dst: int, imm: int) -> None:
        self.emit(ALU64 | MOV | K, dst, imm=imm)

    def mov_reg(self, dst: int, src: int) -> None:
        self.emit(ALU64 | MOV | X, dst, src)

    def add(self, dst: int, imm: int) -> None:
        self.emit(ALU64 | ADD | K, dst, imm=imm)

    def and_(self, dst: int, imm: int) -> None:
        self.emit(ALU64 | AND | K, dst, imm=imm)

    def lsh(self, dst: int, imm: int) -> None:
        self.emit(ALU64 | LSH | K, dst, imm=imm)

    def load(self, size: int, dst: int, src: int, off: int) -> None:
        self.emit(LDX | MEM | size, dst, src, off)

    def store(self, size: int, dst: int, off: int, src: int) -> None:
        self.emit(STX | MEM | size, dst, src, off)

    def jump32(self, op: int, dst: int, imm: int, label: str) -> None:
        """Compare the low 32 bits with IMM (as unsigned): no sign extension to trip on."""
        self.emit(JMP32 | op | K, dst, off=label, imm=_s32(imm))

    def jump(self, op: int, dst: int, imm: int, label: str) -> None:
        self.emit(JMP | op | K, dst, off=label, imm=imm)

    def jump_reg(self, op: int, dst: int, src: int, label: str) -> None:
        self.emit(JMP | op | X, dst, src, off=label)

    def goto(self, label: str) -> None:
        self.emit(JMP | JA, off=label)

    def call(self, helper: int) -> None:
        self.emit(JMP | CALL, imm=helper)

    def exit(self) -> None:
        self.emit(JMP | EXIT)

    def assemble(self) -> bytes:
        out = []
        for index, (code, dst, src, imm, off) in enumerate(self.items):
            if isinstance(off, str):
                if off not in self.labels:
                    raise ValueError(f"jump to unknown label {off}")
                off = self.labels[off] - index - 1
            out.append(_insn(code, dst, src, off, imm))
        return b"".join(out)


def _s32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


# --- the kernel side -------------------------------------------------------------

class BpfError(SystemdLayerError, OSError):
    """The kernel refused; for a load, `log` is the verifier's account."""

    def __init__(self, err: int, what: str, log: str = ""):
        super().__init__(err, f"{what}: {os.strerror(err)}" + (f"\n{log.strip()}" if log else ""))
        self.log = log


def _bpf(command: int, attr: bytes) -> int:
    number = _SYSCALL.get(platform.machine())
    if number is None:
        raise BpfError(errno.ENOSYS, f"bpf() on {platform.machine()}")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    buffer = ctypes.create_string_buffer(attr, 144)
    result = libc.syscall(ctypes.c_long(number), ctypes.c_int(command), buffer, ctypes.c_uint(144))
    if result < 0:
        raise BpfError(ctypes.get_errno(), f"bpf command {command}")
    return int(result)


def load(program: bytes, name: str, prog_type: int = PROG_TYPE_CGROUP_SKB,
         attach_type: int = CGROUP_INET_EGRESS) -> int:
    """The program's file descriptor; BpfError with the verifier's log if refused."""
    code = ctypes.create_string_buffer(program, len(program))
    licence = ctypes.create_string_buffer(b"GPL")
    log = ctypes.create_string_buffer(1 << 16)
    attr = struct.pack("<IIQQIIQII16sII", prog_type, len(program) // 8, ctypes.addressof(code),
                       ctypes.addressof(licence), 1, len(log), ctypes.addressof(log), 0, 0,
                       name.encode()[:15], 0, attach_type)
    try:
        return _bpf(_PROG_LOAD, attr)
    except BpfError as error:
        raise BpfError(error.errno or errno.EIO, f"loading {name}", log.value.decode(errors="replace")) from None


def pin(fd: int, path: str) -> None:
    """Name the program at PATH in the BPF file system (it outlives this process)."""
    name = ctypes.create_string_buffer(path.encode())
    try:
        _bpf(_OBJ_PIN, struct.pack("<QII", ctypes.addressof(name), fd, 0))
    except BpfError as error:
        raise BpfError(error.errno or errno.EIO, f"pinning {path}") from None


def pinned(path: str) -> bool:
    """Whether PATH names a BPF object (a plain file there would not do)."""
    name = ctypes.create_string_buffer(path.encode())
    try:
        os.close(_bpf(_OBJ_GET, struct.pack("<QII", ctypes.addressof(name), 0, 0)))
        return True
    except BpfError:
        return False


def mount_bpffs(path: str = BPFFS) -> None:
    """systemd mounts it at boot on a host; a container may not have it."""
    libc = ctypes.CDLL(None, use_errno=True)

    class StatFs(ctypes.Structure):  # struct statfs: f_type first, the rest unread
        _fields_ = [("f_type", ctypes.c_long), ("rest", ctypes.c_byte * 112)]

    info = StatFs()
    if libc.statfs(path.encode(), ctypes.byref(info)) != 0:
        raise BpfError(ctypes.get_errno(), f"reading {path}")
    if info.f_type & 0xFFFFFFFF == _BPF_FS_MAGIC:
        return
    if libc.mount(b"bpf", path.encode(), b"bpf", 0, b"mode=0700") != 0:
        raise BpfError(ctypes.get_errno(), f"mounting the BPF file system at {path}")

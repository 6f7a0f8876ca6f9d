"""The seccomp filter of the bwrap backend: a classic BPF program built in Python.

bubblewrap loads a ready-made filter from a file descriptor (``--seccomp FD``) into
the sandboxed process after it set everything up. The rules follow Flatpak's
(``flatpak-run.c``, ``setup_seccomp``): a default of *allow*, and a deny list of
the system calls an unprivileged program never needs that widen the kernel's attack
surface or undo the sandbox (mounting, namespaces, keyrings, ptrace, kexec, bpf,
userfaultfd, io_uring, odd personalities, kernel modules, ...). A process of another
architecture (i386 ``int 0x80``, x32) is killed, because its system call numbers
would dodge the list.

The program is assembled here (no libseccomp): ``assemble`` turns a short list of
instructions with symbolic jump labels into ``struct sock_filter`` bytes.
``program(machine)`` is built once per process and cached.
"""

from __future__ import annotations

import errno
import functools
import platform
import struct
from dataclasses import dataclass

__all__ = ["ARCHES", "DENIED", "Arch", "Insn", "assemble", "program", "rules"]

# Classic BPF opcodes (linux/filter.h, linux/bpf_common.h).
LD_W_ABS = 0x00 | 0x00 | 0x20  # BPF_LD | BPF_W | BPF_ABS
JEQ_K = 0x05 | 0x10  # BPF_JMP | BPF_JEQ | BPF_K
JGE_K = 0x05 | 0x30  # BPF_JMP | BPF_JGE | BPF_K
JSET_K = 0x05 | 0x40  # BPF_JMP | BPF_JSET | BPF_K
RET_K = 0x06  # BPF_RET | BPF_K

# seccomp return values (linux/seccomp.h).
RET_KILL_PROCESS = 0x8000_0000
RET_ERRNO = 0x0005_0000
RET_ALLOW = 0x7FFF_0000

# Offsets in struct seccomp_data { int nr; u32 arch; u64 ip; u64 args[6]; } (little-endian).
OFF_NR, OFF_ARCH = 0, 4


def arg_lo(index: int) -> int:
    """Offset of the low 32 bits of system call argument ``index``."""
    return 16 + 8 * index


CLONE_NAMESPACES = 0x7E02_0000  # NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET
TIOCSTI, TIOCLINUX = 0x5412, 0x541C
#: personality() values left alone: the default, PER_LINUX32, and the query 0xffffffff.
PERSONALITY_OK = (0x0000_0000, 0x0000_0008, 0xFFFF_FFFF)
#: Socket families allowed (Flatpak's list): AF_UNIX, AF_INET, AF_INET6, AF_NETLINK.
SOCKET_FAMILIES = (1, 2, 10, 16)

#: Denied outright, with the errno returned. ENOSYS for the new mount API and clone3
#: makes libraries fall back to the old calls, which are filtered (as Flatpak does).
#: io_uring's three calls are denied with ENOSYS too (Docker's default profile denies
#: them): its rings perform I/O the filter never sees, and it has been a steady source
#: of kernel privilege escalations; liburing, libuv and Tokio then fall back to epoll.
DENIED: dict[str, int] = {
    **dict.fromkeys(
        (
            "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "keyctl",
            "add_key", "request_key", "ptrace", "perf_event_open", "kexec_load",
            "kexec_file_load", "bpf", "userfaultfd", "open_by_handle_at", "init_module",
            "finit_module", "delete_module", "acct", "swapon", "swapoff", "reboot",
            "quotactl", "quotactl_fd", "ioperm", "iopl", "syslog", "uselib",
            "lookup_dcookie", "vhangup", "nfsservctl", "move_pages", "migrate_pages",
        ),
        errno.EPERM,
    ),
    **dict.fromkeys(
        ("clone3", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick",
         "mount_setattr", "io_uring_setup", "io_uring_enter", "io_uring_register"),
        errno.ENOSYS,
    ),
}  # fmt: skip
#: Allowed only for some argument values (checked by dedicated blocks below).
FILTERED = ("clone", "personality", "ioctl", "socket")


@dataclass(frozen=True)
class Arch:
    """One machine's audit architecture and system call numbers.

    Attributes:
        name: ``platform.machine()`` value.
        audit: ``AUDIT_ARCH_*`` constant in ``seccomp_data.arch``.
        numbers: System call name -> number (only the ones the filter names).
        x32_bit: Numbers at or above this belong to another ABI (x32) and are killed.
    """

    name: str
    audit: int
    numbers: dict[str, int]
    x32_bit: int | None = None


# From /usr/include/x86_64-linux-gnu/asm/unistd_64.h and asm-generic/unistd.h (aarch64);
# tests/sandbox/bwrap/test_seccomp.py compares them with the headers where they are installed.
X86_64 = Arch(
    "x86_64",
    0xC000_003E,
    {
        "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "unshare": 272,
        "setns": 308, "clone": 56, "clone3": 435, "keyctl": 250, "add_key": 248,
        "request_key": 249, "ptrace": 101, "perf_event_open": 298, "kexec_load": 246,
        "kexec_file_load": 320, "bpf": 321, "userfaultfd": 323, "personality": 135,
        "open_by_handle_at": 304, "init_module": 175, "finit_module": 313,
        "delete_module": 176, "acct": 163, "swapon": 167, "swapoff": 168, "reboot": 169,
        "quotactl": 179, "quotactl_fd": 443, "ioperm": 173, "iopl": 172, "syslog": 103,
        "uselib": 134, "lookup_dcookie": 212, "vhangup": 153, "nfsservctl": 180,
        "move_pages": 279, "migrate_pages": 256, "open_tree": 428, "move_mount": 429,
        "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
        "mount_setattr": 442, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "ioctl": 16, "socket": 41,
    },
    x32_bit=0x4000_0000,
)  # fmt: skip
AARCH64 = Arch(
    "aarch64",
    0xC000_00B7,
    {
        "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51, "unshare": 97,
        "setns": 268, "clone": 220, "clone3": 435, "keyctl": 219, "add_key": 217,
        "request_key": 218, "ptrace": 117, "perf_event_open": 241, "kexec_load": 104,
        "kexec_file_load": 294, "bpf": 280, "userfaultfd": 282, "personality": 92,
        "open_by_handle_at": 265, "init_module": 105, "finit_module": 273,
        "delete_module": 106, "acct": 89, "swapon": 224, "swapoff": 225, "reboot": 142,
        "quotactl": 60, "quotactl_fd": 443, "syslog": 116, "lookup_dcookie": 18,
        "vhangup": 58, "nfsservctl": 42, "move_pages": 239, "migrate_pages": 238,
        "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
        "fsmount": 432, "fspick": 433, "mount_setattr": 442, "io_uring_setup": 425,
        "io_uring_enter": 426, "io_uring_register": 427, "ioctl": 29, "socket": 198,
    },
)  # fmt: skip
ARCHES = {arch.name: arch for arch in (X86_64, AARCH64)}


@dataclass(frozen=True)
class Insn:
    """One instruction; ``jt``/``jf`` are label names (or 0 for the next instruction).

    Attributes:
        code: The opcode.
        k: The constant operand.
        jt: Where a true jump goes: a label or 0.
        jf: Where a false jump goes: a label or 0.
        label: Name of this instruction, for jumps to it.
    """

    code: int
    k: int = 0
    jt: str | int = 0
    jf: str | int = 0
    label: str | None = None


def assemble(insns: list[Insn]) -> bytes:
    """``struct sock_filter[]`` bytes for ``insns``, with labels turned into offsets.

    Raises:
        ValueError: A label is unknown, duplicated, behind the jump, or too far (>255).
    """
    where: dict[str, int] = {}
    for index, insn in enumerate(insns):
        if insn.label is not None:
            if insn.label in where:
                raise ValueError(f"label {insn.label!r} is defined twice")
            where[insn.label] = index

    def offset(index: int, target: str | int) -> int:
        if isinstance(target, int):
            return target
        if target not in where:
            raise ValueError(f"jump to unknown label {target!r}")
        distance = where[target] - index - 1
        if not 0 <= distance <= 255:
            raise ValueError(f"jump to {target!r} spans {distance} instructions (0..255)")
        return distance

    out = bytearray()
    for index, insn in enumerate(insns):
        out += struct.pack(
            "<HBBI", insn.code, offset(index, insn.jt), offset(index, insn.jf), insn.k
        )
    return bytes(out)


def _ret(value: int, label: str | None = None) -> Insn:
    return Insn(RET_K, value, label=label)


def rules(arch: Arch) -> list[Insn]:
    """The filter for ``arch`` as instructions (see the module docstring)."""
    eperm = RET_ERRNO | errno.EPERM
    num = arch.numbers
    code = [
        Insn(LD_W_ABS, OFF_ARCH),
        Insn(JEQ_K, arch.audit, jt="native", jf="kill"),
        Insn(LD_W_ABS, OFF_NR, label="native"),
    ]
    if arch.x32_bit is not None:
        code.append(Insn(JGE_K, arch.x32_bit, jt="kill"))
    for name, err in DENIED.items():
        if name in num:
            code += [Insn(JEQ_K, num[name], jf=1), _ret(RET_ERRNO | err)]
    code += [
        Insn(JEQ_K, num["clone"], jt="clone"),
        Insn(JEQ_K, num["personality"], jt="personality"),
        Insn(JEQ_K, num["ioctl"], jt="ioctl"),
        Insn(JEQ_K, num["socket"], jt="socket", jf="allow"),
        # clone(flags, ...): no new namespaces (flags are 64-bit; they all sit low).
        Insn(LD_W_ABS, arg_lo(0), label="clone"),
        Insn(JSET_K, CLONE_NAMESPACES, jt="eperm", jf="allow"),
        # personality(persona): only the default, PER_LINUX32 and the query. The kernel
        # takes an unsigned int, so only the low 32 bits count.
        Insn(LD_W_ABS, arg_lo(0), label="personality"),
        *(Insn(JEQ_K, value, jt="allow") for value in PERSONALITY_OK[:-1]),
        Insn(JEQ_K, PERSONALITY_OK[-1], jt="allow", jf="eperm"),
        # ioctl(fd, cmd, ...): no typing into the terminal (TIOCSTI, TIOCLINUX).
        Insn(LD_W_ABS, arg_lo(1), label="ioctl"),
        Insn(JEQ_K, TIOCSTI, jt="eperm"),
        Insn(JEQ_K, TIOCLINUX, jt="eperm", jf="allow"),
        # socket(family, ...): only the families ordinary programs use.
        Insn(LD_W_ABS, arg_lo(0), label="socket"),
        *(Insn(JEQ_K, family, jt="allow") for family in SOCKET_FAMILIES),
        _ret(RET_ERRNO | errno.EAFNOSUPPORT),
        # Shared exits; classic BPF jumps only forward, so they come last.
        _ret(RET_ALLOW, "allow"),
        _ret(eperm, "eperm"),
        _ret(RET_KILL_PROCESS, "kill"),
    ]
    return code


@functools.cache
def program(machine: str | None = None) -> bytes | None:
    """The assembled filter for ``machine`` (default: this one), or None if unknown.

    Built once per machine name and cached; bwrap reads it from a pipe per command.
    """
    arch = ARCHES.get(machine or platform.machine())
    return None if arch is None else assemble(rules(arch))

"""The seccomp assembler and filter, checked by running the program in a small interpreter."""

from __future__ import annotations

import errno
import platform
import re
import struct
from pathlib import Path

import pytest

from toolproof.sandbox import Sandbox
from toolproof.sandbox.bwrap import _seccomp as seccomp_module
from toolproof.sandbox.bwrap._seccomp import (
    AARCH64,
    ARCHES,
    CLONE_NAMESPACES,
    DENIED,
    FILTERED,
    JEQ_K,
    RET_ALLOW,
    RET_ERRNO,
    RET_K,
    RET_KILL_PROCESS,
    TIOCSTI,
    X86_64,
    Arch,
    Insn,
    assemble,
    program,
)

CLONE_NEWUSER, SIGCHLD, CLONE_THREAD_FLAGS = 0x1000_0000, 17, 0x003D_0F00


def run_filter(code: bytes, nr: int, arch: int, args: tuple[int, ...] = ()) -> int:
    """Interpret classic BPF ``code`` on one ``seccomp_data``; return the action."""
    values = (list(args) + [0] * 6)[:6]
    data = struct.pack("<iIQ6Q", nr, arch, 0, *values)
    insns = [struct.unpack("<HBBI", code[i : i + 8]) for i in range(0, len(code), 8)]
    acc, pc = 0, 0
    while True:
        op, jt, jf, k = insns[pc]
        if op == 0x20:  # ld w abs
            acc = struct.unpack_from("<I", data, k)[0]
            pc += 1
        elif op in (0x15, 0x35, 0x45):  # jeq, jge, jset
            hit = acc == k if op == 0x15 else acc >= k if op == 0x35 else bool(acc & k)
            pc += 1 + (jt if hit else jf)
        elif op == 0x06:
            return k
        else:
            raise AssertionError(f"unexpected opcode {op:#x} at {pc}")


@pytest.mark.parametrize("arch", [X86_64, AARCH64], ids=lambda a: a.name)
def test_every_denied_call_gets_its_errno_and_others_pass(arch: Arch) -> None:
    code = program(arch.name)
    assert code is not None
    for name, err in DENIED.items():
        if name in arch.numbers:
            assert run_filter(code, arch.numbers[name], arch.audit) == RET_ERRNO | err, name
    denied = {arch.numbers[n] for n in (*DENIED, *FILTERED) if n in arch.numbers}
    for nr in range(0, 460):
        if nr not in denied:
            assert run_filter(code, nr, arch.audit) == RET_ALLOW, nr


@pytest.mark.parametrize("arch", [X86_64, AARCH64], ids=lambda a: a.name)
def test_argument_filters(arch: Arch) -> None:
    code = program(arch.name)
    assert code is not None
    num, eperm = arch.numbers, RET_ERRNO | errno.EPERM

    def verdict(name: str, *args: int) -> int:
        return run_filter(code, num[name], arch.audit, args)

    assert verdict("clone", SIGCHLD) == RET_ALLOW  # fork
    assert verdict("clone", CLONE_THREAD_FLAGS) == RET_ALLOW  # a thread
    assert verdict("clone", SIGCHLD | CLONE_NEWUSER) == eperm
    for bit in range(32):
        if CLONE_NAMESPACES >> bit & 1:
            assert verdict("clone", SIGCHLD | 1 << bit) == eperm
    for persona in (0, 8, 0xFFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF):
        assert verdict("personality", persona) == RET_ALLOW
    for persona in (0x0040000, 0x0400000, 0x1_0004_0000):  # ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC
        assert verdict("personality", persona) == eperm
    assert verdict("ioctl", 1, TIOCSTI) == eperm
    assert verdict("ioctl", 1, 0x541C) == eperm
    assert verdict("ioctl", 1, 0x5401) == RET_ALLOW  # TCGETS
    for family in (1, 2, 10, 16):
        assert verdict("socket", family, 1) == RET_ALLOW
    for family in (17, 38, 40, 30):  # packet, alg, vsock, tipc
        assert verdict("socket", family, 1) == RET_ERRNO | errno.EAFNOSUPPORT


def test_other_architectures_and_x32_are_killed() -> None:
    code = program("x86_64")
    assert code is not None
    assert run_filter(code, 39, 0x4000_0003) == RET_KILL_PROCESS  # i386 via int 0x80
    assert run_filter(code, 39, AARCH64.audit) == RET_KILL_PROCESS
    assert run_filter(code, 0x4000_0000 + 39, X86_64.audit) == RET_KILL_PROCESS  # x32
    arm = program("aarch64")
    assert arm is not None
    assert run_filter(arm, 39, 0x4000_0028) == RET_KILL_PROCESS  # 32-bit ARM


def test_unknown_machine_has_no_program() -> None:
    assert program("riscv64") is None
    assert program("x86_64") is program("x86_64")  # built once, cached


def test_assembler_resolves_labels_and_refuses_bad_jumps() -> None:
    code = assemble([Insn(JEQ_K, 5, jt="yes"), Insn(RET_K, 0), Insn(RET_K, 1, label="yes")])
    assert struct.unpack("<HBBI", code[:8]) == (JEQ_K, 1, 0, 5)
    with pytest.raises(ValueError, match="unknown label"):
        assemble([Insn(JEQ_K, 5, jt="nowhere")])
    with pytest.raises(ValueError, match="spans -2"):
        assemble([Insn(RET_K, 0, label="back"), Insn(JEQ_K, 5, jt="back")])
    with pytest.raises(ValueError, match="twice"):
        assemble([Insn(RET_K, 0, label="a"), Insn(RET_K, 0, label="a")])
    far = [Insn(JEQ_K, 5, jt="end"), *[Insn(RET_K, 0)] * 300, Insn(RET_K, 1, label="end")]
    with pytest.raises(ValueError, match=r"0\.\.255"):
        assemble(far)


_HEADERS = {
    "x86_64": Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
    "aarch64": Path("/usr/include/asm-generic/unistd.h"),
}


@pytest.mark.parametrize("machine", sorted(ARCHES))
def test_numbers_match_the_kernel_headers(machine: str) -> None:
    header = _HEADERS[machine]
    if not header.exists():
        pytest.skip(f"{header} is not installed (apt-get install linux-libc-dev)")
    text = header.read_text()
    for name, number in ARCHES[machine].numbers.items():
        found = re.search(rf"#define __NR(?:3264)?_{name}\s+(\d+)", text)
        assert found is not None, name
        assert int(found.group(1)) == number, name


def test_the_program_is_assembled_once_per_process(
    bwrap_box: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every command gets the filter from a pipe; the bytes are built only the first time."""
    built: list[int] = []

    def counting(insns: list[Insn]) -> bytes:
        built.append(len(insns))
        return assemble(insns)

    monkeypatch.setattr(seccomp_module, "assemble", counting)
    program.cache_clear()
    try:
        for _ in range(3):
            status = bwrap_box.exec("grep Seccomp: /proc/self/status").stdout
            assert status.split() == ["Seccomp:", "2"] or program() is None
    finally:
        program.cache_clear()  # the counting assembler's result is not kept
    assert len(built) == (1 if platform.machine() in ARCHES else 0)

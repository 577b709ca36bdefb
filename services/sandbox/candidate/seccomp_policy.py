"""The seccomp filter installed in every candidate process before its code runs.

Namespaces already give the candidate an empty network, its own PID space and a private
filesystem view; this filter removes the system calls that reach past them. Internet and
netlink sockets fail (so not even the sandbox's own loopback is usable), as do tracing other
processes, reading or writing their memory, new namespaces (unshare, setns, clone with
namespace flags), mounts, kernel keyrings, BPF, io_uring and module loading. Everything else
stays allowed: Triton needs to fork ptxas and a C compiler, and PyTorch needs threads.
"""

from __future__ import annotations

import errno
import socket

DENIED_SYSCALLS: tuple[str, ...] = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "bpf",
    "perf_event_open",
    "keyctl",
    "add_key",
    "request_key",
    "userfaultfd",
    "io_uring_setup",
    "kexec_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "syslog",
    "acct",
    "settimeofday",
    "clock_settime",
)
NAMESPACE_FLAGS: tuple[int, ...] = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
)
DENIED_SOCKET_FAMILIES: tuple[int, ...] = (
    socket.AF_INET,
    socket.AF_INET6,
    socket.AF_NETLINK,
    socket.AF_PACKET,
)


def install() -> None:
    """Loads the filter into this process and every process it starts (irreversible)."""
    import pyseccomp

    policy = pyseccomp.SyscallFilter(defaction=pyseccomp.ALLOW)
    # Without this the kernel forces the speculative-store-bypass mitigation on filtered
    # processes, slowing the candidate's Python (its launch path) but not the reference's.
    policy.set_attr(pyseccomp.Attr.CTL_SSB, 1)
    deny = pyseccomp.ERRNO(errno.EPERM)
    for name in DENIED_SYSCALLS:
        try:
            policy.add_rule(deny, name)
        except (ValueError, RuntimeError):  # syscall unknown on this architecture
            continue
    for family in DENIED_SOCKET_FAMILIES:
        policy.add_rule(deny, "socket", pyseccomp.Arg(0, pyseccomp.EQ, family))
    for flag in NAMESPACE_FLAGS:
        policy.add_rule(deny, "clone", pyseccomp.Arg(0, pyseccomp.MASKED_EQ, flag, flag))
    # clone3 passes its flags in memory a filter cannot read: report it missing, and the C
    # library falls back to clone, whose flags are checked above.
    policy.add_rule(pyseccomp.ERRNO(errno.ENOSYS), "clone3")
    policy.load()

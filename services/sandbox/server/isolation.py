"""Starting judge and candidate processes confined by the operating system.

With bubblewrap each process gets new PID, network, IPC and UTS namespaces (so it sees no other
process, has no network but an unusable loopback of its own, and dies with its parent), a
read-only view of only the paths Python needs, a private writable scratch directory and a
private /tmp, a scrubbed environment and no capabilities. When the server runs as root the
process also drops to an unprivileged uid of its own, so that the process limit binds. Resource
limits apply in every mode; the seccomp filter is installed by the process itself
(services/sandbox/candidate/seccomp_policy.py). Without bubblewrap ("none" mode) only the environment,
the uid, the scratch directory and the limits remain: the server says so at start and in
SandboxService/Describe.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from drkernel.logs import get_logger
from services.sandbox.settings import IsolationSettings

log = get_logger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parents[3]
# What a sandboxed process needs of the project: the two packages, not tests, benchmarks or
# the repository's other files.
_PROJECT_PACKAGES = (PROJECT_ROOT / "drkernel", PROJECT_ROOT / "services")
_TASKS_DIR = Path(__file__).resolve().parents[1] / "tasks"
_SYSTEM_PATHS = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/opt/conda")
_ETC_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/nsswitch.conf",
    "/etc/localtime",
)
_GPU_PATHS = ("/usr/local/nvidia", "/usr/local/cuda", "/run/nvidia-persistenced")
_PASSED_ENV = ("LD_LIBRARY_PATH", "CUDA_HOME", "TRITON_PTXAS_PATH", "TRITON_CUDART_PATH", "TRITON_LIBCUDA_PATH")


def _python_paths() -> set[str]:
    """The interpreter, its libraries and the project's packages, and nothing else that happens
    to be on sys.path (a script's own directory, for one, may be the host's /tmp)."""
    prefixes = {sys.prefix, sys.base_prefix}
    configured = set(filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)))
    paths = set(prefixes) | {str(p) for p in _PROJECT_PACKAGES}
    for entry in sys.path:
        if not entry or not os.path.isdir(entry) or Path(entry).resolve() in (PROJECT_ROOT, Path("/")):
            continue
        inside = any(entry == p or entry.startswith(p.rstrip("/") + "/") for p in prefixes)
        if inside or "site-packages" in entry or "dist-packages" in entry or entry in configured:
            paths.add(entry)
    return paths


def _seccomp_available() -> tuple[bool, str]:
    """Whether libseccomp can be loaded here (candidates install their filter with it:
    candidate/seccomp_policy.py), with a reason when it cannot."""
    try:
        import pyseccomp

        pyseccomp.SyscallFilter(defaction=pyseccomp.ALLOW)
    except Exception as error:  # noqa: BLE001 - any failure means "not available"
        return False, f"libseccomp unavailable: {error}"
    return True, "system calls past the namespaces are refused (EPERM)"


@dataclass(frozen=True)
class Mechanism:
    """One defence and whether it is active here (reported by Describe)."""

    name: str
    active: bool
    detail: str


@dataclass(frozen=True)
class ProcessSpec:
    """What to start and where: the module, its arguments and its private directory.
    ``memory_bytes`` limits its address space (RLIMIT_AS); None leaves it unlimited, as a
    process using CUDA needs (the driver reserves address space far beyond what it uses)."""

    module: str
    args: tuple[str, ...]
    scratch: Path
    device: str
    uid: int | None
    pass_fds: tuple[int, ...]
    memory_bytes: int | None
    cpus: tuple[int, ...] = ()


class Launcher:
    """Builds the command line, environment and limits of a confined process."""

    def __init__(self, settings: IsolationSettings) -> None:
        self.settings = settings
        self.is_root = os.geteuid() == 0
        self.bwrap = shutil.which("bwrap")
        self.namespaces = self._namespaces_usable()
        self.seccomp, self._seccomp_detail = (
            _seccomp_available() if settings.seccomp else (False, "disabled by settings")
        )
        if settings.mode == "bubblewrap" and not self.namespaces:
            raise RuntimeError("isolation.mode is bubblewrap but bubblewrap cannot create namespaces here")
        if not self.namespaces:
            log.warning(
                "SANDBOX WITHOUT NAMESPACES: candidate code runs with only rlimits, a scrubbed "
                "environment and a separate uid; install bubblewrap for full isolation",
                bwrap=self.bwrap,
            )

    def _namespaces_usable(self) -> bool:
        if self.settings.mode == "none" or self.bwrap is None:
            return False
        # The same mounts a real sandbox needs (a masked /proc, say, makes --proc fail).
        probe = [
            self.bwrap,
            *self._namespace_flags(),
            "--ro-bind",
            "/",
            "/",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--",
            "true",
        ]
        try:
            return subprocess.run(probe, capture_output=True, timeout=20).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    def _namespace_flags(self) -> list[str]:
        flags = ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
        return flags if self.is_root else ["--unshare-user", *flags]

    def mechanisms(self) -> list[Mechanism]:
        """Every defence and its state on this host."""
        ns = "PID, network, IPC and UTS namespaces; read-only filesystem view; private /tmp and scratch"
        return [
            Mechanism(
                "bubblewrap namespaces",
                self.namespaces,
                ns if self.namespaces else f"missing (bwrap: {self.bwrap or 'not installed'})",
            ),
            Mechanism("seccomp", self.seccomp, self._seccomp_detail),
            Mechanism(
                "unprivileged uid",
                self.is_root,
                "each worker slot drops to its own uid"
                if self.is_root
                else "server is not root: processes keep its uid",
            ),
            Mechanism(
                "resource limits",
                True,
                "CPU time, processes, open files, file size, core dumps; address space of CPU candidates and judges",
            ),
            Mechanism("scrubbed environment", True, "only the variables Python, Triton and CUDA need"),
        ]

    def environment(self, spec: ProcessSpec, scratch_in_sandbox: Path) -> dict[str, str]:
        env = {
            "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
            "PYTHONPATH": os.pathsep.join(
                [str(PROJECT_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
            ),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            "HOME": str(scratch_in_sandbox),
            "TMPDIR": str(scratch_in_sandbox / "tmp"),
            "USER": "sandbox",
            "LOGNAME": "sandbox",
            "TRITON_CACHE_DIR": str(scratch_in_sandbox / ".triton"),
            "TRITON_DEFAULT_FP_FUSION": os.environ.get("TRITON_DEFAULT_FP_FUSION", "1"),
            "TORCHINDUCTOR_CACHE_DIR": str(scratch_in_sandbox / ".inductor"),
            "CUBLAS_WORKSPACE_CONFIG": ":4096:8",
            "OMP_NUM_THREADS": "1",
        }
        env.update({k: os.environ[k] for k in _PASSED_ENV if k in os.environ})
        if spec.device == "cpu":
            env["TRITON_INTERPRET"] = "1"
            env["CUDA_VISIBLE_DEVICES"] = ""
        else:
            env["CUDA_VISIBLE_DEVICES"] = spec.device.split(":", 1)[1]
            # Fewer out-of-memory failures from fragmentation with full-size tensors.
            env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
        return env

    def _bwrap_args(self, spec: ProcessSpec) -> list[str]:
        args = [self.bwrap or "bwrap", "--die-with-parent", "--new-session", *self._namespace_flags()]
        if not self._drop_privileges(spec):
            args += ["--cap-drop", "ALL"]  # else setpriv drops them together with the uid
        bound: set[str] = set()

        made: set[str] = {"/"}

        def make_parents(path: str) -> None:
            # bubblewrap would create missing parents as 0700, unreadable after the uid drop
            parent = os.path.dirname(path)
            if parent not in made:
                make_parents(parent)
                args.extend(["--perms", "0755", "--dir", parent])
                made.add(parent)

        def bind(path: str, flag: str = "--ro-bind") -> None:
            covered = any(path == b or path.startswith(b.rstrip("/") + "/") for b in bound)
            if covered or not os.path.exists(path):
                return
            bound.add(path)
            make_parents(path)
            if os.path.islink(path) and os.path.dirname(path) == "/":
                args.extend(["--symlink", os.readlink(path), path])
            else:
                args.extend([flag, path, path])

        for path in _SYSTEM_PATHS + _ETC_FILES:
            bind(path)
        for path in sorted(_python_paths(), key=len):  # parents first; their children come along
            bind(path)
        if spec.device != "cpu":
            for path in _GPU_PATHS:
                bind(path)
        # The built-in tasks' solutions (and tasks) must not be readable by a candidate.
        args += ["--tmpfs", str(_TASKS_DIR), "--proc", "/proc", "--dev", "/dev"]
        if spec.device != "cpu":
            for node in sorted(glob.glob("/dev/nvidia*")):
                args += ["--dev-bind", node, node]
        args += ["--bind", str(spec.scratch), "/scratch", "--chdir", "/scratch", "--clearenv"]
        for key, value in self.environment(spec, Path("/scratch")).items():
            args += ["--setenv", key, value]
        return args

    def _drop_privileges(self, spec: ProcessSpec) -> list[str]:
        if spec.uid is None or not self.is_root:
            return []
        return [
            "setpriv",
            f"--reuid={spec.uid}",
            f"--regid={spec.uid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
            "--",
        ]

    def command(self, spec: ProcessSpec) -> tuple[list[str], dict[str, str] | None, Path]:
        """The argv, the environment (None when bwrap sets it) and the working directory."""
        spec.scratch.mkdir(parents=True, exist_ok=True)
        (spec.scratch / "tmp").mkdir(exist_ok=True)
        if spec.uid is not None and self.is_root:
            for path in (spec.scratch, spec.scratch / "tmp"):
                os.chown(path, spec.uid, spec.uid)
        program = [sys.executable, "-m", spec.module, *spec.args]
        outside = [*self._pinning(spec), *self._limits(spec)]
        if self.namespaces:
            return [*outside, *self._bwrap_args(spec), *self._drop_privileges(spec), *program], None, spec.scratch
        return [*outside, *self._drop_privileges(spec), *program], self.environment(spec, spec.scratch), spec.scratch

    def _pinning(self, spec: ProcessSpec) -> list[str]:
        """taskset in front of the command when the process gets cores of its own."""
        return ["taskset", "--cpu-list", ",".join(map(str, spec.cpus))] if spec.cpus else []

    def _limits(self, spec: ProcessSpec) -> list[str]:
        """prlimit in front of the command: no Python runs between fork and exec (unsafe in a
        threaded server), and the limits are inherited by everything inside."""
        settings = self.settings
        limits = [
            f"--cpu={settings.cpu_seconds}",
            f"--nproc={settings.max_processes}",
            f"--nofile={settings.max_open_files}",
            f"--fsize={settings.max_file_bytes}",
            "--core=0",
        ]
        if spec.memory_bytes is not None:
            limits.append(f"--as={spec.memory_bytes}")
        return ["prlimit", *limits, "--"]

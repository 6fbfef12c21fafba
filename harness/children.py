"""Child processes the harness starts from threads (the Python import checks run while the builds do).

A build changes os.environ (build.toolchain_env sets CUDA_HOME and PYTORCH_NVCC, then restores them). A child
started with env=None execs with the C `environ` array itself, and CPython's vfork path lets other threads run
meanwhile: a setenv in another thread can reallocate that array under the exec, which then fails with
"[Errno 14] Bad address" (seen on the H200 machine in the adversarial build tests; tests/test_children.py
shows it within a few hundred starts). A copy taken here is the child's own.
"""
import os
import subprocess


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    """subprocess.run with the environment copied at the call (unless the caller gives one)."""
    if "env" not in kwargs:
        kwargs["env"] = environment_copy()
    return subprocess.run(cmd, **kwargs)


def environment_copy() -> dict[str, str]:
    """os.environ as a dict; copying reads the keys first, so a name another thread removes meanwhile
    raises KeyError: then copy again."""
    while True:
        try:
            return dict(os.environ)
        except KeyError:
            continue

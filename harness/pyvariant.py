"""Python variants (kernels/<name>.py, e.g. Triton kernels inside): the same forward contract as a .cu file.

- "Build" without a GPU: the file is imported in a process of its own (`python -m harness.pyvariant FILE`)
  and must define `forward(hidden, w_down, w_up_k, w_up_v, kv_heads)`; an import error is the variant's
  build-failed, with the error's last line. Triton compiles kernels at their first call, so this checks
  syntax, imports and the signature, not the kernels.
- On the GPU (in the worker): `prepare` imports the file and makes the first call on the row's shape, timed as
  the row's compile_s: Triton's JIT compile and any autotuning happen there, never in the check or the timed
  samples (autotuners key on the shape, which stays the same for the row). An error raised inside Triton's
  compiler (decided by where it was raised, not by its text) is a BuildError: the row is build-failed.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import inspect
import subprocess
import sys
import traceback
from pathlib import Path

from harness import children

REPO = Path(__file__).resolve().parent.parent
FORWARD_PARAMS = ("hidden", "w_down", "w_up_k", "w_up_v", "kv_heads")


class BuildError(Exception):
    """A Python variant failed to import, or its kernels failed to compile: the row's build-failed."""


def is_python(so_path: str) -> bool:
    """Targets of Python variants carry the .py file where a CUDA variant's carry its built .so."""
    return str(so_path).endswith(".py")


def module_name(path: Path) -> str:
    """kvbench_py_<name>_<hash of the file>: the row's `build`, so compare notes an edited file."""
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]
    return f"kvbench_py_{Path(path).stem}_{digest}"


def load(path: Path, name: str | None = None):
    """Import the file as a module and check its forward; any failure is a BuildError naming the file."""
    path = Path(path)
    name = name or module_name(path)
    if name in sys.modules:
        return sys.modules[name]
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    except BaseException as exc:  # SyntaxError, ImportError, anything the module raised at import
        sys.modules.pop(name, None)
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise BuildError(f"{path}: import failed: {_last_line(exc)}") from None
    check_forward(module, path)
    return module


def check_forward(module, path: Path) -> None:
    forward = getattr(module, "forward", None)
    if not callable(forward):
        raise BuildError(f"{path}: defines no forward(hidden, w_down, w_up_k, w_up_v, kv_heads)")
    try:
        inspect.signature(forward).bind(*FORWARD_PARAMS)
    except TypeError as exc:
        raise BuildError(f"{path}: forward must take (hidden, w_down, w_up_k, w_up_v, kv_heads): {exc}") from None


def import_check(path: Path, timeout_s: float = 300.0) -> tuple[bool, str]:
    """Import the file in a fresh interpreter: (ok, message)."""
    try:
        proc = children.run([sys.executable, "-m", "harness.pyvariant", str(path)], cwd=REPO,
                            capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return False, f"{path}: import did not finish within {timeout_s:.0f} s"
    if proc.returncode == 0:
        return True, ""
    lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
    return False, lines[-1] if lines else f"{path}: import check exited with code {proc.returncode}"


@contextlib.contextmanager
def compile_errors():
    """Around a Python variant's first call (Triton's JIT and autotuning): a compile error is a BuildError."""
    try:
        yield
    except Exception as exc:
        if raised_in_triton_compiler(exc):
            raise BuildError(f"Triton compile error: {_last_line(exc)}") from None
        raise


def raised_in_triton_compiler(exc: BaseException) -> bool:
    """True when the exception is Triton's (its error classes) or was raised inside triton's compiler or
    backends (MLIR pass failures are plain RuntimeErrors)."""
    if type(exc).__module__.split(".")[0] == "triton":
        return True
    for frame in traceback.extract_tb(exc.__traceback__):
        parts = Path(frame.filename).parts
        if "triton" in parts:
            tail = parts[parts.index("triton") + 1:]
            if tail and tail[0] in ("compiler", "backends"):
                return True
    return False


def _last_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    text = f"{type(exc).__name__}: {lines[-1] if lines else ''}".rstrip(": ")
    return text[:400]


def main(argv: list[str]) -> int:
    try:
        load(Path(argv[0]))
    except BuildError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

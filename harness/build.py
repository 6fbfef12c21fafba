"""Build: compile each variant with load_inline into a build directory keyed by a hash of what goes in."""
from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import fcntl
import hashlib
import logging
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import torch

from harness import cubin
from harness import includes as header_libs
from harness import resources
from harness.baselines import import_extension
from harness.errors import HeaderLibraryMissing, ToolchainError
from harness.progress import Progress

log = logging.getLogger(__name__)

FORWARD_DECL = ("at::Tensor forward(at::Tensor hidden, at::Tensor w_down, "
                "at::Tensor w_up_k, at::Tensor w_up_v, int64_t kv_heads);")
# main.cpp holds only the declarations and their pybind11 binding, so it includes what a binding needs and not
# load_inline's own torch/extension.h (the whole C++ frontend: 48 s against 16 s on one core). load_inline adds
# nothing to the .cu either (no_implicit_headers): a .cu includes what it uses (README, "Writing a variant").
BINDING_PRELUDE = ("#include <ATen/core/Tensor.h>\n"
                   "#include <torch/csrc/utils/pybind.h>\n"    # pybind11 and its at::Tensor and STL casters
                   "#include <torch/csrc/Exceptions.h>\n")     # torch::wrap_pybind_function: TORCH_CHECK -> Python
BASE_NVCC_FLAGS = ("-O3", "-lineinfo", "-Xptxas", "-v")  # -v: ptxas's resource report, kept in nvcc.log
NVCC_WRAPPER = Path(__file__).resolve().parent / "cuda" / "nvcc_log.sh"
TEMPLATE_VERSION = "2"  # bump when how load_inline is called changes
DEFAULT_CACHE = Path(__file__).resolve().parent.parent / "build" / "extensions"
CXX_STD = "c++20"  # load_inline's own choice under torch 2.14, which CI installs; for nvcc runs outside it


@dataclasses.dataclass(frozen=True)
class ExtensionSource:
    """What load_inline gets: a name, CUDA source, the C++ declarations and functions to bind."""
    name: str
    cuda_source: str
    declarations: str
    functions: tuple[str, ...]
    nvcc_flags: tuple[str, ...] = ()
    ldflags: tuple[str, ...] = ()
    include_dirs: tuple[str, ...] = ()  # the variant's own folder: headers it shares with its neighbours
    header_libraries: tuple[str, ...] = ()  # `// includes:` names, resolved on the building machine


HEADER_SUFFIXES = (".h", ".hpp", ".cuh")


@dataclasses.dataclass(frozen=True)
class BuildResult:
    name: str
    ok: bool
    cached: bool = False
    so_path: str = ""
    module_name: str = ""
    seconds: float = 0.0
    message: str = ""      # first compiler/linker/import error lines when not ok
    log_path: str = ""
    resources: tuple[resources.KernelResources, ...] | None = None  # ptxas's report of each kernel


@contextlib.contextmanager
def toolchain_env():
    """Point torch at a working CUDA toolkit for the duration of a build, then restore.

    torch guesses CUDA_HOME=/usr/local from /usr/local/bin/nvcc on some machines and the link then
    fails on -lcudart; /usr/local/cuda is the toolkit's real home there.
    """
    saved_env = os.environ.get("CUDA_HOME")
    saved_nvcc = os.environ.get("PYTORCH_NVCC")
    home = saved_env
    if home is None and Path("/usr/local/cuda/bin/nvcc").exists():
        home = "/usr/local/cuda"
    if home is not None:
        os.environ["CUDA_HOME"] = home
    # nvcc through a wrapper that keeps ptxas's resource report (torch drops a successful build's output)
    os.environ["PYTORCH_NVCC"] = f"/bin/sh {shlex.quote(str(NVCC_WRAPPER))}"
    from torch.utils import cpp_extension  # reads CUDA_HOME when first imported

    saved_attr = cpp_extension.CUDA_HOME
    try:
        if home is not None:
            cpp_extension.CUDA_HOME = home
        yield home or saved_attr
    finally:
        for name, saved in (("CUDA_HOME", saved_env), ("PYTORCH_NVCC", saved_nvcc)):
            if saved is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = saved
        cpp_extension.CUDA_HOME = saved_attr


def check_toolchain(cuda_home: str | None) -> None:
    if torch.version.cuda is None:
        raise ToolchainError(f"torch {torch.__version__} is not a CUDA build; install a CUDA build "
                             f"(pip install -r requirements.txt)")
    nvcc = Path(cuda_home or "", "bin", "nvcc")
    if not cuda_home or not nvcc.exists():
        raise ToolchainError("nvcc not found: set CUDA_HOME to a CUDA toolkit (with bin/nvcc)")


def arch_flags() -> tuple[str, ...]:
    """-gencode flags: TORCH_CUDA_ARCH_LIST when set, else the GPU present, else sm_90a (H200).

    A Hopper GPU (9.0) is built for sm_90a, the target that adds wgmma and setmaxnreg: the code runs
    on exactly that chip, which is the one present. Kernels that use those instructions guard them
    with __CUDA_ARCH_FEAT_SM90_ALL so a build for another target still compiles."""
    spec = os.environ.get("TORCH_CUDA_ARCH_LIST", "").strip()
    if not spec:
        if torch.cuda.is_available():
            major, minor = torch.cuda.get_device_capability()
            spec = f"{major}.{minor}" + ("a" if (major, minor) == (9, 0) else "")
        else:
            spec = "9.0a"
    flags = []
    for arch in re.split(r"[;\s,]+", spec):
        if not arch:
            continue
        ptx = arch.endswith("+PTX")
        arch = arch.removesuffix("+PTX")
        m = re.fullmatch(r"(\d+)\.(\d+)([af]?)", arch)
        if not m:
            raise ToolchainError(f"TORCH_CUDA_ARCH_LIST entry '{arch}' is not like 9.0 or 9.0a")
        num = f"{m.group(1)}{m.group(2)}{m.group(3)}"
        flags.append(f"-gencode=arch=compute_{num},code=sm_{num}")
        if ptx:
            flags.append(f"-gencode=arch=compute_{num},code=compute_{num}")
    return tuple(flags)


def wheel_cuda_dirs() -> tuple[list[Path], list[Path]]:
    """Include and library folders of the CUDA wheels torch depends on (cublas_v2.h, libcublas.so.13)."""
    site = Path(torch.__file__).resolve().parent.parent / "nvidia"
    includes = sorted(p for p in site.glob("cu*/include") if p.is_dir())
    libs = sorted(p for p in site.glob("cu*/lib") if p.is_dir())
    return includes, libs


def resolve_ldflags(flags: tuple[str, ...], lib_dirs: list[Path]) -> list[str]:
    """`-lNAME` where only a versioned libNAME.so.N exists (the CUDA wheels) becomes `-l:libNAME.so.N`."""
    out = []
    for flag in flags:
        m = re.fullmatch(r"-l([\w+.-]+)", flag)
        if m and not any((d / f"lib{m.group(1)}.so").exists() for d in lib_dirs):
            versioned = sorted(p.name for d in lib_dirs for p in d.glob(f"lib{m.group(1)}.so.*"))
            if versioned:
                flag = f"-l:{min(versioned, key=len)}"
        out.append(flag)
    return out


def resolve_libraries(src: ExtensionSource) -> tuple[header_libs.HeaderLibrary, ...]:
    """The header libraries the source asks for, as found on this machine (HeaderLibraryMissing if not)."""
    return tuple(header_libs.resolve(name) for name in src.header_libraries)


def standalone_nvcc_flags(src: ExtensionSource) -> list[str]:
    """The flags this harness's build gives `src` beyond the architecture, for an nvcc run outside load_inline (a
    ptxas report, `nvcc -M`): its include folders (the variant's own, its header libraries', the CUDA wheels',
    torch's, Python's), torch's common CUDA defines, the C++ standard, BASE_NVCC_FLAGS and the variant's own flags.
    Raises HeaderLibraryMissing as a build would."""
    from torch.utils import cpp_extension

    system = [*cpp_extension.include_paths(), sysconfig.get_paths()["include"]]
    return [*(f"-I{d}" for d in extra_include_paths(src, resolve_libraries(src))),
            *(f for d in system for f in ("-isystem", d)), *cpp_extension.COMMON_NVCC_FLAGS, f"-std={CXX_STD}",
            *BASE_NVCC_FLAGS, *src.nvcc_flags]


def extra_include_paths(src: ExtensionSource, libraries: tuple[header_libs.HeaderLibrary, ...]) -> list[str]:
    """The include folders the build adds to torch's own, in order: the variant's folder, its header libraries',
    the CUDA wheels' (cublas_v2.h)."""
    includes, _ = wheel_cuda_dirs()
    return [*src.include_dirs, *(d for lib in libraries for d in lib.include_dirs), *(str(p) for p in includes)]


def build_key(src: ExtensionSource, archs: tuple[str, ...],
              libraries: tuple[header_libs.HeaderLibrary, ...] = ()) -> str:
    h = hashlib.sha256()
    library_parts = [part for lib in libraries for part in lib.key_parts()]  # version + folders, not 27 MB
    for part in (TEMPLATE_VERSION, BINDING_PRELUDE, torch.__version__, sys.version, src.cuda_source, src.declarations,
                 *src.functions, *BASE_NVCC_FLAGS, *src.nvcc_flags, *src.ldflags, *archs, *library_parts):
        h.update(part.encode())
        h.update(b"\0")
    for folder in src.include_dirs:  # an edited shared header is a new build too
        for header in sorted(p for p in Path(folder).iterdir() if p.suffix in HEADER_SUFFIXES):
            h.update(header.name.encode() + b"\0" + header.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def first_error_lines(text: str, limit: int = 6) -> str:
    lines = [ln.strip() for ln in text.splitlines()]
    errors = [ln for ln in lines if re.search(r"\berror\b|undefined (symbol|reference)", ln, re.I)]
    picked = errors[:limit] or [ln for ln in lines if ln][-limit:]
    return "\n".join(picked)


ANY_INCLUDE_OF_TORCH = re.compile(r'^\s*#\s*include\s*(<(torch|ATen|c10)/|")', re.M)  # a quoted header may bring it
TORCH_NAME = re.compile(r"\b(torch|at|c10)::")
MISSING_MEMBER = re.compile(r'namespace "(at|torch)" has no member "(\w+)"')


def include_hint(cuda_source: str, errors: str) -> str:
    """One line for a failed build whose errors look like a missing include, since the harness adds no header in
    front of a .cu (load_inline's no_implicit_headers): empty when nothing points that way."""
    hints = []
    operator_headers = Path(torch.__file__).parent / "include" / "ATen" / "ops"
    for namespace, name in dict.fromkeys(MISSING_MEMBER.findall(errors)):
        if (operator_headers / f"{name}.h").is_file():
            hints.append(f"at::{name} is declared in <ATen/ops/{name}.h>" if namespace == "at" else
                         f"torch::{name} is at::{name}, declared in <ATen/ops/{name}.h>")
        elif namespace == "torch":
            hints.append(f"torch::{name} needs <torch/types.h>, slow to compile (at::{name} needs less)")
    if not hints and TORCH_NAME.search(cuda_source) and not ANY_INCLUDE_OF_TORCH.search(cuda_source):
        hints.append("the .cu names torch's API but includes none of its headers, and the harness adds none: "
                     "include <ATen/core/Tensor.h> and what else it uses")
    return ("hint: " + "; ".join(hints) + " (README, Writing a variant)") if hints else ""


TORCH_LOCK = "lock"            # load_inline's own lock file in the build folder
BUILD_LOCK = "harness.lock"    # ours: an flock, which the kernel releases when its holder dies


def torch_waits_on_lock_file() -> bool:
    """Whether this torch's load_inline guards a build folder with FileBaton, a file whose mere existence makes
    every later build wait forever when a build was killed (pytorch#189245; torch 2.11 is one). Newer torch holds
    an flock on the same file instead (pytorch#190543), which leaves the file behind harmlessly."""
    from torch.utils import cpp_extension

    return hasattr(cpp_extension, "FileBaton")


@contextlib.contextmanager
def exclusive_build_dir(build_dir: Path):
    """One builder of a build folder at a time, across processes, and no wait on a dead one.

    Ours is an flock: while we hold it no other harness process is building here, so with a torch that waits on
    the `lock` file, a `lock` found then was left by a killed build (Ctrl-C twice, a timeout's SIGKILL) and is
    removed: otherwise every later build of that extension hangs."""
    build_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(build_dir / BUILD_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        stale = build_dir / TORCH_LOCK
        if stale.exists() and torch_waits_on_lock_file():
            log.warning("%s: removing the lock file an interrupted build left", build_dir.name)
            stale.unlink(missing_ok=True)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def build_one(src: ExtensionSource, cache_root: Path = DEFAULT_CACHE) -> BuildResult:
    """Compile, link and import one extension; a failure becomes a BuildResult, never an exception."""
    archs = arch_flags()
    try:
        libraries = resolve_libraries(src)
    except HeaderLibraryMissing as exc:
        return BuildResult(src.name, ok=False, message=str(exc))
    module_name = f"{src.name}_{build_key(src, archs, libraries)}"
    build_dir = Path(cache_root) / module_name
    with exclusive_build_dir(build_dir):  # a concurrent builder of the same folder finishes first: then cached
        return _build_locked(src, archs, libraries, module_name, build_dir)


def _build_locked(src: ExtensionSource, archs: tuple[str, ...], libraries, module_name: str,
                  build_dir: Path) -> BuildResult:
    from torch.utils.cpp_extension import load_inline

    cached_so = next(iter(sorted(build_dir.glob(f"{module_name}*.so"))), None)
    if cached_so is not None:
        # The key covers every input (source, shared headers, flags, archs, torch, libraries), so the cached
        # library is this build. Imported directly: ninja would rebuild it when only the variant's folder (an
        # -I path, e.g. a fresh temporary folder) differs, though the build is the same.
        start = time.perf_counter()
        try:
            module = import_extension(str(cached_so), module_name)
        except Exception as exc:  # a damaged file: build it again
            log.info("%s: cached %s not importable (%s); building again", src.name, cached_so.name, exc)
        else:
            return BuildResult(src.name, ok=True, cached=True, so_path=module.__file__, module_name=module_name,
                               seconds=time.perf_counter() - start, log_path=str(build_dir / "build.log"),
                               resources=resources.read_build(build_dir, module.__file__))
    _, lib_dirs = wheel_cuda_dirs()
    cuda_home = os.environ.get("CUDA_HOME", "")
    lib_dirs = lib_dirs + [p for p in (Path(cuda_home, "lib64"),) if cuda_home and p.is_dir()]
    ldflags = [f"-L{d}" for d in lib_dirs] + [f"-Wl,-rpath,{d}" for d in lib_dirs]
    ldflags += resolve_ldflags(src.ldflags, lib_dirs)
    start = time.perf_counter()
    log_path = build_dir / "build.log"
    for lib in libraries:
        log.debug("%s: %s %s from %s", src.name, lib.name, lib.version, lib.found_by)
    try:
        module = load_inline(
            name=module_name, cpp_sources=BINDING_PRELUDE + src.declarations,
            cuda_sources=src.cuda_source, functions=list(src.functions), no_implicit_headers=True,
            extra_cflags=["-O2"], extra_cuda_cflags=[*BASE_NVCC_FLAGS, *archs, *src.nvcc_flags],
            extra_ldflags=ldflags, extra_include_paths=extra_include_paths(src, libraries),
            build_directory=str(build_dir), verbose=False)
    except Exception as exc:  # compile, link and import errors all end here
        text = str(exc)
        log_path.write_text(text)
        message = "\n".join(part for part in (first_error_lines(text), include_hint(src.cuda_source, text)) if part)
        return BuildResult(src.name, ok=False, seconds=time.perf_counter() - start,
                           message=message, log_path=str(log_path))
    seconds = time.perf_counter() - start
    warn_shared_statics(src.name, module.__file__)
    return BuildResult(src.name, ok=True, so_path=module.__file__, module_name=module_name,
                       seconds=seconds, log_path=str(log_path),
                       resources=resources.read_build(build_dir, module.__file__))


def warn_shared_statics(name: str, so_path: str) -> None:
    """One warning line when a fresh build holds objects that are one per process (cubin.shared_statics): the
    profiling process and the GPU tests load several extensions into one process, where such a cache answers for
    another build's kernels (fused_tiled's did: results/NOTES.md 2026-12-06 fifth)."""
    try:
        shared = cubin.shared_statics(so_path)
    except (OSError, subprocess.CalledProcessError):  # no binutils here: nothing known, nothing said
        return
    if shared:
        log.warning("%s: %d object(s) one per process, not per extension (first: %s); make the functions that hold "
                    "them static inline", name, len(shared), shared[0])


def build_all(sources: list[ExtensionSource], cache_root: Path = DEFAULT_CACHE,
              jobs: int | None = None, heartbeat_s: float = 20.0) -> dict[str, BuildResult]:
    """Build in parallel threads (each load_inline runs its own ninja), logging progress as they finish."""
    jobs = jobs or max(1, min(len(sources), os.cpu_count() or 1))
    results: dict[str, BuildResult] = {}
    with toolchain_env() as cuda_home:
        check_toolchain(cuda_home)
        log.info("building %d extension(s), %d at a time, for %s", len(sources), jobs, " ".join(arch_flags()))
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs)
        finished = False
        try:
            with Progress("building", len(sources)) as progress:
                pending = {pool.submit(_build_started, progress, s, cache_root): s.name for s in sources}
                while pending:
                    done, _ = concurrent.futures.wait(pending, timeout=heartbeat_s,
                                                      return_when=concurrent.futures.FIRST_COMPLETED)
                    for fut in done:
                        res = fut.result()
                        results[pending.pop(fut)] = res
                        how = "cached" if res.cached else ("built" if res.ok else "FAILED")
                        progress.finish(res.name, f"{how} in {res.seconds:.1f} s")
                    if pending and not done:
                        progress.heartbeat()
            finished = True
        finally:
            # Interrupted (Ctrl-C): start no queued build and do not wait for the running ones (their
            # compilers got the same SIGINT), so the caller can write its result file and exit now.
            pool.shutdown(wait=finished, cancel_futures=True)
    return results


def _build_started(progress: Progress, src: ExtensionSource, cache_root: Path) -> BuildResult:
    progress.start(src.name)
    return build_one(src, cache_root)


def clean(cache_root: Path = DEFAULT_CACHE) -> None:
    shutil.rmtree(cache_root, ignore_errors=True)

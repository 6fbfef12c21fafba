"""Resources of each kernel in a built extension: registers per thread, static shared memory, stack and
local-memory spill bytes, max threads per block and theoretical occupancy.

Two sources, one record (KernelResources):
- at build time, ptxas's own report (`-Xptxas -v`, kept in the build folder's nvcc.log by
  harness/cuda/nvcc_log.sh): works without a GPU. Max threads per block is the kernel's launch bound (the
  EIATTR_MAX_THREADS attribute of its cubin: harness/cubin.py) capped by the register file's limit, or that
  limit alone; occupancy is computed at that block size for the build's architecture by the CUDA occupancy
  rules (harness/occupancy.py);
- where a GPU is present, the driver's view of the loaded module (`python -m harness.resources SO...`, a
  process of its own): the .so's fatbin loaded with cuModuleLoadData, then cuFuncGetAttribute (registers,
  static shared and local bytes, max threads per block: the launch bound when the kernel has one) and
  cuOccupancyMaxActiveBlocksPerMultiprocessor at that block size with no dynamic shared memory.
A launch's real occupancy (its block size and dynamic shared memory) is in the per-row breakdown.
"""
from __future__ import annotations

import ctypes
import dataclasses
import functools
import json
import math
import re
import struct
import sys
from pathlib import Path

from harness import cubin, occupancy

PTXAS_LOG = "nvcc.log"  # written by harness/cuda/nvcc_log.sh into each build folder


@dataclasses.dataclass(frozen=True)
class KernelResources:
    name: str                       # mangled symbol
    arch: str                       # sm_90a, ...
    registers: int
    static_smem: int                # bytes per block
    stack: int = 0                  # bytes of stack frame per thread (local memory)
    spill_stores: int = 0           # bytes per thread
    spill_loads: int = 0
    max_threads: int | None = None  # per block
    occupancy: float | None = None  # active warps / max warps per SM, at max_threads and no dynamic smem
    source: str = "ptxas"           # "ptxas" (build time) or "driver" (read from the loaded module)

    @property
    def spills(self) -> bool:
        return self.spill_stores > 0 or self.spill_loads > 0


@dataclasses.dataclass(frozen=True)
class VariantResources:
    """One built variant (or axes combination): ptxas's report of its kernels and, where a GPU read the loaded
    module, the driver's."""
    build: str | None
    kernels: tuple[KernelResources, ...]
    driver: tuple[KernelResources, ...] | None = None

    def spilling(self) -> tuple[KernelResources, ...]:
        return tuple(k for k in self.kernels if k.spills)


def to_dict(entry: VariantResources) -> dict:
    return {"build": entry.build, "kernels": [_kernel_dict(k) for k in entry.kernels],
            "driver": None if entry.driver is None else [_kernel_dict(k) for k in entry.driver]}


def _kernel_dict(k: KernelResources) -> dict:
    d = dataclasses.asdict(k)
    d["occupancy"] = None if k.occupancy is None else round(k.occupancy, 3)
    return d


def from_dict(entry: dict) -> VariantResources:
    def kernels(items):
        fields = {f.name for f in dataclasses.fields(KernelResources)}
        return tuple(KernelResources(**{k: v for k, v in item.items() if k in fields}) for item in items)
    driver = entry.get("driver")
    return VariantResources(entry.get("build"), kernels(entry.get("kernels") or ()),
                            None if driver is None else kernels(driver))


# ---- ptxas -v ---------------------------------------------------------------------------------------

_ENTRY = re.compile(r"ptxas info\s*: Compiling entry function '([^']+)' for '(\w+)'")
_PROPS = re.compile(r"ptxas info\s*: Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"ptxas info\s*: Used (\d+) registers(.*)")
_SMEM = re.compile(r"(\d+) bytes smem")


def parse_ptxas(text: str, bounds: dict[str, int] | None = None) -> list[KernelResources]:
    """Entry functions (kernels) from ptxas -v output, one per kernel and architecture, in output order.
    `bounds`: kernel name -> its __launch_bounds__ threads (from the cubin), where known."""
    found: dict[tuple[str, str], dict] = {}
    current: tuple[str, str] | None = None
    props_for: str | None = None
    for line in text.splitlines():
        if m := _ENTRY.search(line):
            current = (m.group(1), m.group(2))
            found[current] = {"registers": 0, "static_smem": 0, "stack": 0, "spill_stores": 0, "spill_loads": 0}
            props_for = None
        elif m := _PROPS.search(line):
            props_for = m.group(1)
        elif (m := _FRAME.search(line)) and current and props_for == current[0]:
            found[current].update(stack=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3)))
        elif (m := _USED.search(line)) and current:
            smem = _SMEM.search(m.group(2))
            found[current].update(registers=int(m.group(1)), static_smem=int(smem.group(1)) if smem else 0)
    out = []
    for (name, arch), fields in found.items():
        limits = occupancy.limits_for_arch(arch)
        max_threads = occupancy.register_limited_threads(fields["registers"], limits) if limits else None
        bound = (bounds or {}).get(name)
        if max_threads and bound:
            max_threads = min(max_threads, bound)
        occ = occupancy.occupancy(limits, max_threads, fields["registers"], fields["static_smem"]) if max_threads else None
        out.append(KernelResources(name, arch, max_threads=max_threads, occupancy=occ, **fields))
    return out


def read_build(build_dir: str | Path, so_path: str | Path | None = None) -> tuple[KernelResources, ...] | None:
    """The kernels of one build from its kept ptxas report (and the launch bounds in its .so); None when the
    build folder has no report."""
    log = Path(build_dir) / PTXAS_LOG
    if not log.exists():
        return None
    bounds = {}
    if so_path is not None:
        try:
            bounds = cubin.launch_bounds(so_path)
        except (OSError, ValueError, struct.error):  # an unexpected layout: the register limit stands
            bounds = {}
    return tuple(parse_ptxas(log.read_text(errors="replace"), bounds))


# ---- names ----------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def demangle(name: str) -> str:
    """A C++ symbol as source code spells it (through libstdc++'s demangler); the symbol itself if that fails."""
    try:
        lib = ctypes.CDLL("libstdc++.so.6")
        fn = lib.__cxa_demangle
        fn.restype = ctypes.c_void_p
        status = ctypes.c_int()
        ptr = fn(name.encode(), None, None, ctypes.byref(status))
        if status.value != 0 or not ptr:
            return name
        text = ctypes.string_at(ptr).decode(errors="replace")
        ctypes.CDLL("libc.so.6").free(ctypes.c_void_p(ptr))
        return text
    except (OSError, AttributeError):
        return name


def short_name(name: str, width: int = 60) -> str:
    """`void (anonymous namespace)::up_stack_kernel<float, 128, ...>(...)` -> `up_stack_kernel<float, 128, ...>`."""
    text = demangle(name) if name.startswith("_Z") else name
    text = re.sub(r"^void ", "", text)
    text = text.replace("(anonymous namespace)::", "")
    depth, cut = 0, len(text)
    for i, ch in enumerate(text):  # drop the parameter list: the first '(' outside template brackets
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "(" and depth == 0:
            cut = i
            break
    text = text[:cut]
    return text if len(text) <= width else text[: width - 1] + "…"


# ---- the loaded module (GPU) -------------------------------------------------------------------------

_CU_FUNC_ATTRIBUTE = {"max_threads": 0, "static_smem": 1, "local_bytes": 3, "registers": 4}


class DriverError(RuntimeError):
    pass


class _Driver:
    """libcuda through ctypes; a function's current ABI where the header maps it to a _v2 symbol."""

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")

    def __getattr__(self, name):
        return getattr(self.lib, f"{name}_v2", None) or getattr(self.lib, name)

    def has(self, name: str) -> bool:
        return hasattr(self.lib, name)


def _driver():
    cuda = _Driver()

    def check(result, what):
        if result != 0:
            text = ctypes.c_char_p()
            cuda.cuGetErrorString(result, ctypes.byref(text))
            raise DriverError(f"{what}: {(text.value or b'').decode() or result}")
    return cuda, check


def read_loaded(so_paths: list[str], device: int = 0) -> dict[str, list[dict]]:
    """For each .so, its kernels as the driver loads them: {so_path: [KernelResources as dict]}."""
    cuda, check = _driver()
    check(cuda.cuInit(0), "cuInit")
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    check(cuda.cuDeviceGet(ctypes.byref(dev), device), "cuDeviceGet")
    check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    check(cuda.cuCtxPushCurrent(ctx), "cuCtxPushCurrent")
    major, minor = ctypes.c_int(), ctypes.c_int()
    check(cuda.cuDeviceGetAttribute(ctypes.byref(major), 75, dev), "compute capability major")
    check(cuda.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev), "compute capability minor")
    max_warps = ctypes.c_int()
    check(cuda.cuDeviceGetAttribute(ctypes.byref(max_warps), 39, dev), "max threads per SM")
    arch = f"sm_{major.value}{minor.value}"
    out: dict[str, list[dict]] = {}
    try:
        for so_path in so_paths:
            kernels = []
            for image in cubin.fatbins(so_path):
                kernels += _read_image(cuda, check, image, arch, max_warps.value // 32)
            out[so_path] = [dataclasses.asdict(k) for k in kernels]
    finally:
        cuda.cuCtxPopCurrent(ctypes.byref(ctypes.c_void_p()))
        cuda.cuDevicePrimaryCtxRelease(dev)
    return out


def _read_image(cuda, check, image: bytes, arch: str, max_warps: int) -> list[KernelResources]:
    module = ctypes.c_void_p()
    buffer = ctypes.create_string_buffer(image, len(image))
    check(cuda.cuModuleLoadData(ctypes.byref(module), buffer), "cuModuleLoadData")
    try:
        count = ctypes.c_uint()
        check(cuda.cuModuleGetFunctionCount(ctypes.byref(count), module), "cuModuleGetFunctionCount")
        funcs = (ctypes.c_void_p * count.value)()
        check(cuda.cuModuleEnumerateFunctions(funcs, count, module), "cuModuleEnumerateFunctions")
        kernels = []
        for func in funcs:
            if cuda.has("cuFuncLoad"):  # lazy loading: the attributes need the function loaded
                cuda.cuFuncLoad(ctypes.c_void_p(func))
            name = ctypes.c_char_p()
            check(cuda.cuFuncGetName(ctypes.byref(name), ctypes.c_void_p(func)), "cuFuncGetName")
            attrs = {}
            for key, attr in _CU_FUNC_ATTRIBUTE.items():
                value = ctypes.c_int()
                check(cuda.cuFuncGetAttribute(ctypes.byref(value), attr, ctypes.c_void_p(func)), f"attribute {key}")
                attrs[key] = value.value
            blocks = ctypes.c_int()
            check(cuda.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                ctypes.byref(blocks), ctypes.c_void_p(func), attrs["max_threads"], ctypes.c_size_t(0)), "occupancy")
            warps = math.ceil(attrs["max_threads"] / 32)
            kernels.append(KernelResources(
                name=name.value.decode(), arch=arch, registers=attrs["registers"], static_smem=attrs["static_smem"],
                stack=attrs["local_bytes"], max_threads=attrs["max_threads"],
                occupancy=blocks.value * warps / max_warps if max_warps else None, source="driver"))
        return kernels
    finally:
        cuda.cuModuleUnload(module)


def read_loaded_in_subprocess(so_paths: list[str], timeout_s: float = 120.0) -> dict[str, list[KernelResources]]:
    """read_loaded in a process of its own (a driver fault must not take the harness with it)."""
    if not so_paths:
        return {}
    from harness import children
    proc = children.run([sys.executable, "-m", "harness.resources", *so_paths], capture_output=True, text=True,
                        timeout=timeout_s, cwd=Path(__file__).resolve().parent.parent)
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        raise DriverError(lines[-1] if lines else f"exit code {proc.returncode}")
    raw = json.loads(proc.stdout)
    return {path: [KernelResources(**k) for k in kernels] for path, kernels in raw.items()}


def with_driver_view(entries: dict[str, VariantResources], so_paths: dict[str, str]) -> dict[str, VariantResources]:
    """Each entry with the driver's view of its loaded module (GPU present). A failed read-out is logged and
    leaves ptxas's report: it is extra information, never the end of a run."""
    import logging
    try:
        loaded = read_loaded_in_subprocess(sorted(set(so_paths.values())))
    except Exception as exc:
        logging.getLogger(__name__).warning("could not read the loaded modules' attributes: %s", exc)
        return entries
    return {name: dataclasses.replace(entry, driver=tuple(loaded.get(so_paths.get(name), ())))
            for name, entry in entries.items()}


def main(argv: list[str]) -> int:
    try:
        print(json.dumps(read_loaded(argv)))
    except (DriverError, OSError, ValueError) as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

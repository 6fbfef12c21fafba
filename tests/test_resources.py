"""Kernel resources: ptxas's report parsed (a recorded nvcc 13 output with a spilling kernel), the occupancy
rules, names, the fatbin inside a built extension; the driver's read-out on the GPU."""
from pathlib import Path

import pytest

from harness import cubin, occupancy, resources

DATA = Path(__file__).parent / "data"
H100 = occupancy.LIMITS[(9, 0)]


@pytest.fixture(scope="module")
def kernels():
    # nvcc 13.0 -Xptxas -v, two targets: a kernel with static shared memory and one that spills
    # (__launch_bounds__(1024, 2) leaves 32 registers for 96 live floats)
    return resources.parse_ptxas((DATA / "ptxas_v.txt").read_text())


def test_every_kernel_and_target_is_read(kernels):
    assert [(k.name, k.arch) for k in kernels] == [("_Z9with_smemPf", "sm_80"), ("_Z6spillsPfi", "sm_80"),
                                                   ("_Z9with_smemPf", "sm_90a"), ("_Z6spillsPfi", "sm_90a")]


def test_registers_shared_memory_and_spills(kernels):
    smem = kernels[2]
    assert (smem.registers, smem.static_smem, smem.stack, smem.spills) == (10, 8192, 0, False)
    spill = kernels[3]
    assert (spill.registers, spill.static_smem, spill.stack, spill.spill_stores, spill.spill_loads) == \
           (32, 0, 1720, 1900, 3916)
    assert spill.spills and spill.source == "ptxas"


def test_build_time_max_threads_and_occupancy(kernels):
    # 10 or 32 registers: the register file holds 64 warps, so a 1024-thread block fits twice: 100 %
    assert all(k.max_threads == 1024 and k.occupancy == 1.0 for k in kernels)


@pytest.mark.parametrize("threads, regs, smem, expected", [
    (256, 128, 0, 0.25),          # registers: 4096 per warp, 4 warps per scheduler, 2 blocks of 8 warps
    (128, 168, 48 * 1024, 0.1875),  # registers: 3 warps per scheduler -> 12 warps, 3 blocks of 4
    (256, 32, 100 * 1024, 0.25),  # shared memory: 101 KB with the reserved 1 KB, 2 blocks in 228 KB
    (1024, 64, 0, 0.5),           # registers: one 1024-thread block
    (32, 16, 0, 0.5),             # blocks: at most 32 blocks of one warp
    (64, 40, 0, 0.75),            # registers per scheduler: 12 warps of 1280 each in 16384, not 51 in 65536
    (1024, 255, 0, 0.0),          # 255 registers cannot run 1024 threads
])
def test_occupancy_rules(threads, regs, smem, expected):
    assert occupancy.occupancy(H100, threads, regs, smem) == pytest.approx(expected)


def test_register_limited_block():
    assert occupancy.register_limited_threads(255, H100) == 256
    assert occupancy.register_limited_threads(128, H100) == 512
    assert occupancy.register_limited_threads(96, H100) == 640
    assert occupancy.register_limited_threads(32, H100) == 1024


def test_launch_bound_caps_max_threads_and_sets_the_occupancy(kernels):
    text = (DATA / "ptxas_v.txt").read_text()
    bounded = {(k.name, k.arch): k for k in resources.parse_ptxas(text, {"_Z9with_smemPf": 256})}
    k = bounded["_Z9with_smemPf", "sm_90a"]
    assert k.max_threads == 256 and k.occupancy == pytest.approx(occupancy.occupancy(H100, 256, 10, 8192))
    assert bounded["_Z6spillsPfi", "sm_90a"].max_threads == 1024  # no bound given: the register limit


def nv_info(*records):
    return b"".join(records)


def sval(attribute, payload):
    return bytes([cubin.EIFMT_SVAL, attribute]) + len(payload).to_bytes(2, "little") + payload


def test_launch_bound_read_from_the_kernels_nv_info_records():
    threads = (128).to_bytes(4, "little") + (2).to_bytes(4, "little") + (1).to_bytes(4, "little")
    other = bytes([0x03, 0x1b, 0x20, 0x00])  # a 2-byte record (EIATTR_MAXREG_COUNT-like) before it
    decoy = sval(0x36, (64).to_bytes(4, "little") * 3)  # another 12-byte attribute first
    assert cubin.nv_info_max_threads(nv_info(other, decoy, sval(0x05, threads))) == 256
    assert cubin.nv_info_max_threads(nv_info(other, decoy)) is None
    assert cubin.nv_info_max_threads(sval(0x05, b"\0" * 8)) is None  # not the (x, y, z) it should be


def test_unknown_arch_has_no_occupancy():
    text = (DATA / "ptxas_v.txt").read_text().replace("sm_90a", "sm_120")
    k = [k for k in resources.parse_ptxas(text) if k.arch == "sm_120"][0]
    assert k.max_threads is None and k.occupancy is None and k.registers == 10


def test_short_names():
    assert resources.short_name("_Z6spillsPfi") == "spills"
    mangled = "_ZN12_GLOBAL__N_115up_stack_kernelIfLi128ELi128EEEvPKfPfi"
    assert resources.short_name(mangled) == "up_stack_kernel<float, 128, 128>"
    assert resources.short_name("triton_kernel_name") == "triton_kernel_name"


def test_round_trip_through_the_result_file_form(kernels):
    entry = resources.VariantResources("x_abc", tuple(kernels), None)
    assert resources.from_dict(resources.to_dict(entry)) == entry
    assert [k.name for k in entry.spilling()] == ["_Z6spillsPfi", "_Z6spillsPfi"]


@pytest.mark.build
def test_fatbin_found_in_an_object_file(tmp_path):
    """The .nv_fatbin section of an ELF file holds the images the driver loads (checked here on a real
    build's .so in test_build.py)."""
    so = _build_output(tmp_path)
    if so is None:
        pytest.skip("needs nvcc")
    (image,) = cubin.fatbins(so)
    assert int.from_bytes(image[:4], "little") == cubin.FATBIN_MAGIC


def test_not_an_elf_file(tmp_path):
    path = tmp_path / "x.so"
    path.write_bytes(b"not elf at all")
    with pytest.raises(ValueError, match="not a 64-bit ELF"):
        cubin.fatbins(path)


def _build_output(tmp_path):
    import shutil
    import subprocess
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None)
    if nvcc is None:
        return None
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(float* x) { x[threadIdx.x] = 1.f; }\n")
    subprocess.run([nvcc, "-c", "-o", str(tmp_path / "k.o"), str(src), "-gencode=arch=compute_90a,code=sm_90a"],
                   check=True, capture_output=True)
    return tmp_path / "k.o"


@pytest.mark.gpu
def test_driver_reads_the_loaded_module_like_ptxas(tmp_path):
    """On the GPU: the driver's registers and static shared memory of the template's kernels match ptxas's."""
    from harness import axes, build, discover, runner
    from harness.scaffold import write_variant
    shutil_copy(tmp_path)
    spec = discover.load_variant(write_variant("scaffolded", tmp_path))  # test_scaffold's build: cached
    combo = axes.combinations(spec.name, spec.axes)[0]
    result = build.build_all([runner.variant_extension(spec, combo)])[combo.build_name]
    assert result.ok, result.message
    loaded = resources.read_loaded_in_subprocess([result.so_path])[result.so_path]
    ptxas = {k.name: k for k in result.resources}
    assert loaded and {k.name for k in loaded} <= set(ptxas)
    for k in loaded:
        assert (k.registers, k.static_smem) == (ptxas[k.name].registers, ptxas[k.name].static_smem)
        assert k.max_threads == 256 and k.source == "driver"  # TILE=16: __launch_bounds__(256)
        assert 0 < k.occupancy <= 1


def shutil_copy(folder):
    import shutil
    shutil.copy(Path(__file__).resolve().parent.parent / "kernels" / "kv_common.cuh", folder)

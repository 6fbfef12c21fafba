"""Theoretical occupancy by the CUDA occupancy rules: how many warps of a kernel fit on one SM, given its block
size, registers per thread and shared memory per block, and the SM's limits for its compute capability.
Pure arithmetic: used at build time (no GPU) and for each profiled launch."""
from __future__ import annotations

import dataclasses
import math
import re

@dataclasses.dataclass(frozen=True)
class SmLimits:
    """Per-SM limits of one compute capability (CUDA C Programming Guide, technical specifications)."""
    max_warps: int
    max_blocks: int
    smem: int                      # bytes of shared memory an SM can give blocks (largest carveout)
    regs: int = 65536
    reg_unit: int = 256            # registers are allocated per warp in units of this many
    sub_partitions: int = 4        # the register file is split among the SM's 4 schedulers
    smem_reserved: int = 1024      # per block, reserved by the system (compute capability 8.0 and later)
    smem_unit: int = 128


LIMITS = {
    (8, 0): SmLimits(max_warps=64, max_blocks=32, smem=164 * 1024),
    (8, 6): SmLimits(max_warps=48, max_blocks=16, smem=100 * 1024),
    (8, 9): SmLimits(max_warps=48, max_blocks=24, smem=100 * 1024),
    (9, 0): SmLimits(max_warps=64, max_blocks=32, smem=228 * 1024),
    (10, 0): SmLimits(max_warps=64, max_blocks=32, smem=228 * 1024),
}


def limits_for(major: int, minor: int) -> SmLimits | None:
    return LIMITS.get((major, minor))


def limits_for_arch(arch: str) -> SmLimits | None:
    """'sm_90a' -> the limits of compute capability 9.0 (None for an architecture not in LIMITS)."""
    m = re.fullmatch(r"(?:sm|compute)_(\d+?)(\d)[af]?", arch)
    return limits_for(int(m.group(1)), int(m.group(2))) if m else None


def _regs_per_warp(registers: int, limits: SmLimits) -> int:
    return math.ceil(max(registers, 1) * 32 / limits.reg_unit) * limits.reg_unit


def register_limited_threads(registers: int, limits: SmLimits, cap: int = 1024) -> int:
    """The largest block (a multiple of 32 threads) whose warps all fit in the register file."""
    warps = (limits.regs // limits.sub_partitions // _regs_per_warp(registers, limits)) * limits.sub_partitions
    return max(0, min(cap, warps * 32))


def occupancy(limits: SmLimits | None, threads: int | None, registers: int, smem_per_block: int) -> float | None:
    """Theoretical occupancy (resident warps / max warps per SM) of blocks of `threads` threads using
    `registers` per thread and `smem_per_block` bytes of shared memory (static + dynamic)."""
    if limits is None or not threads or threads <= 0:
        return None
    warps = math.ceil(threads / 32)
    by_threads = min(limits.max_blocks, limits.max_warps // warps)
    warps_by_regs = (limits.regs // limits.sub_partitions // _regs_per_warp(registers, limits)) * limits.sub_partitions
    by_regs = warps_by_regs // warps
    smem = math.ceil((smem_per_block + limits.smem_reserved) / limits.smem_unit) * limits.smem_unit
    by_smem = limits.smem // smem
    blocks = max(0, min(by_threads, by_regs, by_smem))
    return blocks * warps / limits.max_warps

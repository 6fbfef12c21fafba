# summary: Two-stage design in Triton on tensor cores (tl.dot): GEMM1 latent = hidden @ w_down (split-K when M is small), GEMM2 latent @ [w_up_k | w_up_v] writing the stacked (b, s, 2, heads, head_dim) output directly, choosing w_up_k or w_up_v per column tile; autotuned tiles, warps, stages and GROUP_M rasterization.
# dtypes: bfloat16,float16,float32

"""Tiling.

GEMM1: latent (M x R) = hidden (M x D) @ w_down (D x R), M = b*s. One program per BLOCK_M x BLOCK_N tile of the
  latent, tiles rasterized in groups of GROUP_M row tiles (consecutive programs share w_down's column tiles in
  L2). When the tiles are too few to fill the GPU (small M), the K loop is split SPLIT_K ways across programs
  (grid axis 1), each writing an fp32 partial; a reduce kernel sums them in a fixed order (deterministic) and
  rounds to the dtype. The latent is kept in the inputs' dtype, as eager PyTorch keeps it, so GEMM2 runs
  on tensor cores.
GEMM2: out viewed as (M x 2N) = latent (M x R) @ [w_up_k | w_up_v] (R x 2N), N = heads * head_dim. The column
  tiles of each half are numbered apart (ceil(N / BLOCK_N) per half), so a tile lies wholly in k or in v and
  reads w_up_k or w_up_v by pointer; it stores into its stacked place (row m, column half * N + n): no k, v,
  cat or stack copy.
Both: fp32 accumulation. Loads wrap rows and columns inside the tensors (index % size) instead of masking
  them (the wrapped results are never stored), and mask K only when it is not a multiple of the K step
  (EVEN_K). float32 uses tl.dot with input_precision="ieee" (true fp32 FMA, no TF32: the harness's float32
  tolerance rejects TF32), with its own smaller tiles.
Not persistent: GEMM2 has ~32 tile waves at DeepSeek-V3 size, so a persistent loop would save launch
  scheduling only; the small-smem configs instead let two programs share an SM, so one's epilogue (the output
  store, large next to a K of 512) overlaps the other's main loop.

Autotuning: keys are the sizes and dtypes, so the harness's first call of each (shape, dtype) row, made
apart from the check and timed as the row's compile time, benchmarks the configs (5 ms warm-up + 25 ms of
repeats each, not Triton's 25 + 100 ms: `_bench_config`); the check, the CUDA-graph
capture and every timed call then hit the autotuner's cache. Configs are pruned by the problem's size first.
The tuning is also kept on disk (cache_results, in Triton's cache folder), so the harness's profiling
process and later runs reuse it instead of benchmarking again; their first call is then compile-cache only.
Works with Triton 3.6 and 3.8 (only long-stable APIs: autotune and its do_bench hook (3.2+), heuristics, tl.dot,
loads and stores).
"""
import contextlib
import functools

import torch
import triton
import triton.language as tl


def _config(bm, bn, bk, warps, stages, group=8):
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": group},
                         num_warps=warps, num_stages=stages)


# Tensor-core (bf16/fp16) and fp32 ("ieee" dot: FMA) configs of each GEMM; prune picks the dtype's list.
LATENT_TC = [_config(128, 128, 64, 8, 4), _config(128, 128, 64, 4, 4), _config(64, 128, 64, 4, 4),
             _config(128, 256, 64, 8, 3), _config(64, 256, 64, 8, 4), _config(128, 64, 64, 4, 4),
             _config(32, 128, 128, 4, 4), _config(16, 128, 128, 4, 4, group=1)]
LATENT_FP32 = [_config(64, 64, 32, 4, 3), _config(128, 64, 32, 8, 3), _config(32, 64, 32, 4, 2),
               _config(16, 64, 32, 4, 2, group=1)]
UP_TC = [_config(128, 256, 64, 8, 3), _config(128, 256, 64, 8, 2), _config(128, 128, 64, 8, 3),
         _config(128, 128, 64, 4, 3), _config(128, 128, 64, 4, 4), _config(256, 128, 64, 8, 3),
         _config(64, 256, 64, 4, 3), _config(64, 128, 64, 4, 4), _config(128, 128, 64, 8, 3, group=1),
         _config(128, 256, 64, 8, 3, group=16), _config(32, 128, 64, 4, 4), _config(16, 128, 128, 4, 3, group=1)]
UP_FP32 = [_config(64, 64, 32, 4, 3), _config(128, 64, 32, 8, 3), _config(64, 128, 32, 8, 3),
           _config(32, 64, 32, 4, 2), _config(16, 64, 32, 4, 2, group=1)]


def _fitting(configs, m, n):
    """Drop tiles far larger than the problem (keep the smallest when none fit)."""
    for key, size in (("BLOCK_M", m), ("BLOCK_N", n)):
        limit = max(16, triton.next_power_of_2(max(int(size), 1)))
        kept = [c for c in configs if c.kwargs[key] <= limit]
        smallest = min(c.kwargs[key] for c in configs)
        configs = kept or [c for c in configs if c.kwargs[key] == smallest]
    return configs


def _of_dtype(configs, fp32_configs, fp32: bool):
    fp32_ids = {id(c) for c in fp32_configs}
    return [c for c in configs if (id(c) in fp32_ids) == fp32]


def _prune_latent(configs, named_args, **kwargs):
    fp32 = named_args["x_ptr"].dtype == torch.float32
    return _fitting(_of_dtype(configs, LATENT_FP32, fp32), named_args["M"], named_args["R"])


def _prune_up(configs, named_args, **kwargs):
    fp32 = named_args["lat_ptr"].dtype == torch.float32
    return _fitting(_of_dtype(configs, UP_FP32, fp32), named_args["M"], named_args["N"])


@triton.jit
def _grouped(pid, num_m, num_n, GROUP_M: tl.constexpr):
    """Tile (pid_m, pid_n) of program pid, walking GROUP_M row tiles per column tile."""
    per_group = GROUP_M * num_n
    first_m = (pid // per_group) * GROUP_M
    size_m = tl.minimum(num_m - first_m, GROUP_M)
    return first_m + (pid % per_group) % size_m, (pid % per_group) // size_m


@triton.jit
def _dot_loop(a_ptrs, b_ptrs, K, step, ldb, rk, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, EVEN_K: tl.constexpr,
              IEEE: tl.constexpr):
    """The main loop of both GEMMs: fp32 acc (BLOCK_M x BLOCK_N) += A[:, k] @ B[k, :] over K in steps of `step`
    (BLOCK_K, times SPLIT_K when programs split K); A is K-contiguous, B has row pitch `ldb`; `rk`: this program's
    k offsets within a step, masked against what is left of K unless EVEN_K."""
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, tl.cdiv(K, step)):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            left = K - k0 * step
            a = tl.load(a_ptrs, mask=rk[None, :] < left, other=0.0)
            b = tl.load(b_ptrs, mask=rk[:, None] < left, other=0.0)
        if IEEE:
            acc = tl.dot(a, b, acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
        a_ptrs += step
        b_ptrs += step * ldb
    return acc


def _bench_config(kernel_call, quantiles):
    """The autotuner's timing of one config: 5 ms of warm-up, then 25 ms of repeats (Triton's default, 25 + 100 ms,
    made the first call of each (shape, dtype) cost 2-3 s over ~20 configs); still 80-2500 repeats of these
    10-300 us kernels, so the median that picks the config is as stable."""
    return triton.runtime.driver.active.get_benchmarker()(kernel_call, warmup=5, rep=25, quantiles=quantiles)


@triton.autotune(configs=LATENT_TC + LATENT_FP32, key=["M", "R", "D", "SPLIT_K"],
                 prune_configs_by={"early_config_prune": _prune_latent}, cache_results=True, do_bench=_bench_config)
@triton.heuristics({"EVEN_K": lambda a: a["D"] % (a["BLOCK_K"] * a["SPLIT_K"]) == 0})
@triton.jit
def latent_kernel(x_ptr, w_ptr, out_ptr, M, R, D, SPLIT_K: tl.constexpr, IEEE: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                  EVEN_K: tl.constexpr):
    pid_m, pid_n = _grouped(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(R, BLOCK_N), GROUP_M)
    pid_k = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
    a_ptrs = x_ptr + (rm % M).to(tl.int64)[:, None] * D + rk[None, :]
    b_ptrs = w_ptr + rk.to(tl.int64)[:, None] * R + (rn % R)[None, :]
    acc = _dot_loop(a_ptrs, b_ptrs, D, BLOCK_K * SPLIT_K, R, rk, BLOCK_M, BLOCK_N, EVEN_K, IEEE)
    mask = (rm[:, None] < M) & (rn[None, :] < R)
    c_offsets = rm.to(tl.int64)[:, None] * R + rn[None, :]
    if SPLIT_K == 1:
        tl.store(out_ptr + c_offsets, acc.to(out_ptr.dtype.element_ty), mask=mask)
    else:  # out_ptr is the fp32 workspace (SPLIT_K, M, R)
        tl.store(out_ptr + pid_k.to(tl.int64) * M * R + c_offsets, acc, mask=mask)


@triton.jit
def reduce_kernel(ws_ptr, out_ptr, total, SPLIT_K: tl.constexpr, BLOCK: tl.constexpr):
    """out = sum of the SPLIT_K partials (in order), rounded to out's dtype."""
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < total
    acc = tl.load(ws_ptr + offsets, mask=mask, other=0.0)
    for s in tl.static_range(1, SPLIT_K):
        acc += tl.load(ws_ptr + s * total + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, acc.to(out_ptr.dtype.element_ty), mask=mask)


@triton.autotune(configs=UP_TC + UP_FP32, key=["M", "N", "R"], prune_configs_by={"early_config_prune": _prune_up},
                 cache_results=True, do_bench=_bench_config)
@triton.heuristics({"EVEN_K": lambda a: a["R"] % a["BLOCK_K"] == 0})
@triton.jit
def up_stack_kernel(lat_ptr, wk_ptr, wv_ptr, out_ptr, M, N, R, IEEE: tl.constexpr,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                    EVEN_K: tl.constexpr):
    tiles_n = tl.cdiv(N, BLOCK_N)  # column tiles per half
    pid_m, pid_n = _grouped(tl.program_id(0), tl.cdiv(M, BLOCK_M), 2 * tiles_n, GROUP_M)
    half = pid_n // tiles_n        # 0: k, 1: v
    if half == 0:
        w_ptr = wk_ptr
    else:
        w_ptr = wv_ptr
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = (pid_n - half * tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = lat_ptr + (rm % M).to(tl.int64)[:, None] * R + rk[None, :]
    b_ptrs = w_ptr + rk.to(tl.int64)[:, None] * N + (rn % N)[None, :]
    acc = _dot_loop(a_ptrs, b_ptrs, R, BLOCK_K, N, rk, BLOCK_M, BLOCK_N, EVEN_K, IEEE)
    out_ptrs = out_ptr + rm.to(tl.int64)[:, None] * (2 * N) + half * N + rn[None, :]
    tl.store(out_ptrs, acc.to(out_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


@functools.lru_cache(maxsize=None)
def _sm_count(device: torch.device) -> int:
    if device.type != "cuda":
        return 132  # Triton's interpreter (CPU tensors, tests): plan as for an H100/H200
    return torch.cuda.get_device_properties(device).multi_processor_count


def split_k(m: int, rank: int, d: int, sms: int) -> int:
    """How many ways to split GEMM1's K: enough programs to cover the SMs when the latent has few tiles."""
    tiles = triton.cdiv(m, 64) * triton.cdiv(rank, 128)
    if 2 * tiles >= sms or d < 1024:
        return 1
    ways = max(1, min(8, sms // tiles, d // 512))
    return 1 << (ways.bit_length() - 1)  # a power of two, so D splits evenly more often


def _check(hidden, w_down, w_up_k, w_up_v, kv_heads):
    tensors = (hidden, w_down, w_up_k, w_up_v)
    if len({t.device for t in tensors}) != 1:
        raise ValueError("all inputs must be on one device")
    if len({t.dtype for t in tensors}) != 1 or hidden.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError("inputs must share one dtype: float32, bfloat16 or float16")
    if not all(t.is_contiguous() for t in tensors):
        raise ValueError("all inputs must be contiguous")
    if hidden.dim() != 3 or w_down.dim() != 2 or w_down.shape[0] != hidden.shape[2]:
        raise ValueError("hidden must be (b, s, d) and w_down (d, rank)")
    if w_up_k.dim() != 2 or w_up_k.shape != w_up_v.shape or w_up_k.shape[0] != w_down.shape[1]:
        raise ValueError("w_up_k and w_up_v must both be (rank, heads * head_dim)")
    if kv_heads <= 0 or w_up_k.shape[1] % kv_heads:
        raise ValueError("heads * head_dim must be a positive multiple of kv_heads")


def forward(hidden, w_down, w_up_k, w_up_v, kv_heads):
    _check(hidden, w_down, w_up_k, w_up_v, kv_heads)
    b, s, d = hidden.shape
    rank, n = w_down.shape[1], w_up_k.shape[1]
    m = b * s
    out = torch.empty((b, s, 2, kv_heads, n // kv_heads), dtype=hidden.dtype, device=hidden.device)
    if out.numel() == 0:
        return out
    if rank == 0 or d == 0:
        return out.zero_()
    ieee = hidden.dtype == torch.float32
    on_device = torch.cuda.device(hidden.device) if hidden.is_cuda else contextlib.nullcontext()
    with on_device:
        latent = torch.empty((m, rank), dtype=hidden.dtype, device=hidden.device)
        ways = split_k(m, rank, d, _sm_count(hidden.device))
        tiles = lambda meta: triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(rank, meta["BLOCK_N"])  # noqa: E731
        if ways == 1:
            latent_kernel[lambda meta: (tiles(meta), 1)](hidden, w_down, latent, m, rank, d, SPLIT_K=1, IEEE=ieee)
        else:
            partials = torch.empty((ways, m, rank), dtype=torch.float32, device=hidden.device)
            latent_kernel[lambda meta: (tiles(meta), ways)](hidden, w_down, partials, m, rank, d, SPLIT_K=ways,
                                                             IEEE=ieee)
            reduce_kernel[(triton.cdiv(m * rank, 1024),)](partials, latent, m * rank, SPLIT_K=ways, BLOCK=1024)
        up_stack_kernel[lambda meta: (triton.cdiv(m, meta["BLOCK_M"]) * 2 * triton.cdiv(n, meta["BLOCK_N"]),)](
            latent, w_up_k, w_up_v, out, m, n, rank, IEEE=ieee)
    return out

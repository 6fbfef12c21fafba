// The two-stage design shared by two_stage.cu and two_stage_pp.cu: the sm_90a tensor-core path (mla_tc.cuh's
// engine: GEMM1 split-k launch, then GEMM2 as its programmatic dependent, with mla_tc's cooperative GEMM2 units or,
// for two_stage_pp at M > 128, mla_pingpong.cuh's ping-pong kernel) and the cuBLAS + SIMT path for float32 and the
// shapes the tensor-core path declines. The tiling is described in two_stage.cu's design block.
#pragma once

#include "kv_common.cuh"
#include "mla_pingpong.cuh"
#include "mla_tc.cuh"

#include <type_traits>

// GEMM1's most k-splits on the tensor-core path (the splits fill the SMs once, up to this many). A -D define
// overrides it: scripts/probe_axis.sh builds one two_stage per value to measure the split-k trade-off.
#ifndef MLA_GEMM1_SPLIT_CAP
#define MLA_GEMM1_SPLIT_CAP 64
#endif
// GEMM1's tile width when M > 128 (128-row tiles): 128 gives twice the tiles of 256, so prefill fills the SMs with
// fewer k-splits or none (V2-Lite 4096: 128 tiles, no split, against 64 tiles x 2 splits). 256 is the engine's
// width of before; a -D define chooses it (scripts/probe_axis.sh compares the two).
#ifndef MLA_GEMM1_BN
#define MLA_GEMM1_BN 128
#endif
static_assert(MLA_GEMM1_BN == 128 || MLA_GEMM1_BN == 256, "GEMM1 tile width: 128 or 256");
// 1: when M > 128 and the 128 x 128 GEMM1 tiles are too few for the SMs (gemm1_rows64), GEMM1 uses 64 x 128 tiles
// instead (MiniCPM3 4096: 128 tiles, no split, against 64 tiles x 2 splits). 0: the 128-row GEMM1 tiles always.
#ifndef MLA_GEMM1_BM64
#define MLA_GEMM1_BM64 1
#endif
static_assert(MLA_GEMM1_BM64 == 0 || MLA_GEMM1_BM64 == 1, "MLA_GEMM1_BM64: 0 or 1");
// Decode (M <= 128): GEMM1's k-splits of one 64 x 128 tile as one cluster of CTAs, reduced through distributed
// shared memory (mla_tc.cuh, Params::cl_red) instead of fp32 partials through L2 and a counter wait. -1 (default):
// g1_cluster_size's rule; 0: the split-k through L2 (the form of before); 8 or 16: that many CTAs per cluster.
#ifndef MLA_G1_CLUSTER
#define MLA_G1_CLUSTER -1
#endif
static_assert(MLA_G1_CLUSTER == -1 || MLA_G1_CLUSTER == 0 || MLA_G1_CLUSTER == 8 || MLA_G1_CLUSTER == 16,
              "MLA_G1_CLUSTER: -1, 0, 8 or 16");

namespace {

using namespace kv;

template <typename T, int BM, int BN, int BK, int TM, int TN, int NT, int STAGES>
struct UpCfg {
    static constexpr int V = 16 / int(sizeof(T));  // dtype elements per 16-byte vector
    static constexpr int APITCH = BK + 4;           // fp32 A chunk row pitch
    static constexpr int A_FLOATS = BM * APITCH;
    static constexpr int B_ELEMS = BK * BN;
    static constexpr size_t STAGE_BYTES = size_t(A_FLOATS) * 4 + size_t(B_ELEMS) * sizeof(T);
    static constexpr size_t SMEM = STAGE_BYTES * STAGES;
    static constexpr int TXN = BN / TN, TYN = BM / TM, NH = TN / 4, HSTRIDE = BN / NH;
    static_assert(TXN * TYN == NT, "thread count must equal (BM/TM) * (BN/TN)");
    static_assert(BM % TM == 0 && BN % TN == 0 && TN % 4 == 0 && BK % 4 == 0, "tile shape");
    static_assert(BN % V == 0 && (A_FLOATS * 4) % 16 == 0 && (B_ELEMS * sizeof(T)) % 16 == 0, "alignment");
    static_assert(STAGES >= 2, "at least double buffering");
};

template <typename T, int BM, int BN, int BK, int TM, int TN, int NT, int STAGES, int KA, int MINB>
__global__ void __launch_bounds__(NT, MINB)
up_stack_kernel(const float* __restrict__ lat, const T* __restrict__ w_up_k, const T* __restrict__ w_up_v,
                T* __restrict__ out, int M, int R, int N, int vec_a, int vec_b, int vec_out) {
    using C = UpCfg<T, BM, BN, BK, TM, TN, NT, STAGES>;
    static_assert(KA == 2 || KA == 4, "A fragment width");
    constexpr int V = C::V, APITCH = C::APITCH, A_FLOATS = C::A_FLOATS, B_ELEMS = C::B_ELEMS;
    constexpr int TXN = C::TXN, NH = C::NH, HSTRIDE = C::HSTRIDE;

    extern __shared__ __align__(16) unsigned char smem_raw[];

    const int tid = threadIdx.x;
    const int ty = tid / TXN, tx = tid - (tid / TXN) * TXN;
    const int64_t m0 = int64_t(blockIdx.x) * BM;
    const int n0 = int(blockIdx.y) * BN;
    const int64_t M64 = M;
    const int N2 = 2 * N;
    const int nK = cdiv(R, BK);

    auto stage_a = [&](int s) { return reinterpret_cast<float*>(smem_raw + size_t(s) * C::STAGE_BYTES); };
    auto stage_b = [&](int s) {
        return reinterpret_cast<T*>(smem_raw + size_t(s) * C::STAGE_BYTES + size_t(A_FLOATS) * 4);
    };

    auto load_chunk = [&](int kc, int s) {
        float* As = stage_a(s);
        T* Bs = stage_b(s);
        const int k0 = kc * BK;
        // A: lat[m0 : m0+BM, k0 : k0+BK] (fp32)
        if (vec_a) {
            constexpr int VPR = BK / 4;
#pragma unroll
            for (int v = tid; v < BM * VPR; v += NT) {
                const int r = v / VPR, kv = (v - r * VPR) * 4;
                const int64_t row = m0 + r;
                const int col = k0 + kv;
                const bool p = row < M64 && col < R;
                const float* src = p ? lat + row * int64_t(R) + col : lat;
                cp_async16(As + r * APITCH + kv, src, p);
            }
        } else {
            for (int e = tid; e < BM * BK; e += NT) {
                const int r = e / BK, kk = e - r * BK;
                const int64_t row = m0 + r;
                const int col = k0 + kk;
                As[r * APITCH + kk] = (row < M64 && col < R) ? lat[row * int64_t(R) + col] : 0.f;
            }
        }
        // B: [w_up_k | w_up_v][k0 : k0+BK, n0 : n0+BN]
        stage_w_up_tile<T, BK, BN, NT>(Bs, w_up_k, w_up_v, k0, n0, R, N, vec_b, tid);
    };

    float acc[TM][TN];
    zero_tile(acc);
    ring_prologue<STAGES>(nK, load_chunk);
    for (int kc = 0; kc < nK; ++kc) {
        ring_next<STAGES>(kc, nK, load_chunk);
        const int s = kc % STAGES;
        const float* A = stage_a(s) + (ty * TM) * APITCH;
        const T* B = stage_b(s) + tx * 4;
#pragma unroll
        for (int kk = 0; kk < BK; kk += KA) {
            float a[TM][KA];  // KA consecutive k of each of the TM rows (float4 or float2 loads)
#pragma unroll
            for (int i = 0; i < TM; ++i) {
                if constexpr (KA == 4) {
                    const float4 t = ld4(A + i * APITCH + kk);
                    a[i][0] = t.x; a[i][1] = t.y; a[i][2] = t.z; a[i][3] = t.w;
                } else {
                    const float2 t = *reinterpret_cast<const float2*>(A + i * APITCH + kk);
                    a[i][0] = t.x; a[i][1] = t.y;
                }
            }
#pragma unroll
            for (int q = 0; q < KA; ++q) {
                float b[TN];
#pragma unroll
                for (int h = 0; h < NH; ++h) {
                    const float4 t = ld4(B + (kk + q) * BN + h * HSTRIDE);
                    b[4 * h + 0] = t.x; b[4 * h + 1] = t.y; b[4 * h + 2] = t.z; b[4 * h + 3] = t.w;
                }
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i][q], b[j], acc[i][j]);
            }
        }
    }
    cp_async_wait<0>();

    // epilogue: rows m0 + ty*TM + i, columns n0 + tx*4 + h*HSTRIDE + {0..3}
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int64_t row = m0 + ty * TM + i;
        if (row >= M64) continue;
#pragma unroll
        for (int h = 0; h < NH; ++h) {
            const int c = n0 + tx * 4 + h * HSTRIDE;
            if (c >= N2) continue;
            T* o = out + row * int64_t(N2) + c;
            const float4 v = make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
            if (vec_out) {  // N2 % 4 == 0, so c + 3 < N2
                st4(o, v);
            } else {
                o[0] = from_f<T>(v.x);
                if (c + 1 < N2) o[1] = from_f<T>(v.y);
                if (c + 2 < N2) o[2] = from_f<T>(v.z);
                if (c + 3 < N2) o[3] = from_f<T>(v.w);
            }
        }
    }
}

template <typename T, int BM, int BN, int BK, int TM, int TN, int NT, int STAGES, int KA, int MINB>
void launch_up(const float* lat, const T* wk, const T* wv, T* out, int M, int R, int N, bool vec_a, bool vec_b,
               bool vec_out, int dev, int optin, cudaStream_t stream) {
    using C = UpCfg<T, BM, BN, BK, TM, TN, NT, STAGES>;
    auto kern = up_stack_kernel<T, BM, BN, BK, TM, TN, NT, STAGES, KA, MINB>;
    TORCH_CHECK(C::SMEM <= size_t(optin),
                "two_stage: stage-two tile needs more shared memory than cudaDevAttrMaxSharedMemoryPerBlockOptin");
    kv::set_max_dynamic_smem_once<up_stack_kernel<T, BM, BN, BK, TM, TN, NT, STAGES, KA, MINB>>(dev, int(C::SMEM));
    const int col_tiles = cdiv(2 * N, BN);
    TORCH_CHECK(col_tiles <= 65535, "two_stage: 2N exceeds the grid.y limit (65535 column tiles)");
    dim3 grid(unsigned(cdiv(M, BM)), unsigned(col_tiles));
    kern<<<grid, NT, C::SMEM, stream>>>(lat, wk, wv, out, M, R, N, vec_a, vec_b, vec_out);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename T>
void run_two_stage(const at::Tensor& hidden, const at::Tensor& w_down, const at::Tensor& w_up_k,
                   const at::Tensor& w_up_v, at::Tensor& out, int M, int D, int R, int N) {
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    auto latent = at::empty({int64_t(M), int64_t(R)}, hidden.options().dtype(at::kFloat));

    // ---- stage one: latent (M x R, fp32) = hidden (M x D) @ w_down (D x R); column-major: lat^T = w_down^T hidden^T
    {
        cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();
        TORCH_CHECK(cublasSetStream(handle, stream) == CUBLAS_STATUS_SUCCESS, "two_stage: cublasSetStream failed");
        kv::MathModeGuard mg(handle, CUBLAS_DEFAULT_MATH);  // no TF32 for the float32 path
        const float one = 1.f, zero = 0.f;
        cublasStatus_t st;
        if constexpr (std::is_same<T, float>::value) {
            st = cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, R, M, D, &one, w_down.data_ptr<float>(), R,
                             hidden.data_ptr<float>(), D, &zero, latent.data_ptr<float>(), R);
        } else {
            const cudaDataType_t ty = std::is_same<T, __half>::value ? CUDA_R_16F : CUDA_R_16BF;
            st = cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, R, M, D, &one, w_down.data_ptr(), ty, R,
                              hidden.data_ptr(), ty, D, &zero, latent.data_ptr(), CUDA_R_32F, R, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT);
        }
        TORCH_CHECK(st == CUBLAS_STATUS_SUCCESS, "two_stage: stage-one cuBLAS GEMM failed");
    }

    // ---- stage two
    const int dev = hidden.get_device();
    int optin = 0;
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;

    const float* lat = latent.data_ptr<float>();
    const T* wk = reinterpret_cast<const T*>(w_up_k.data_ptr());
    const T* wv = reinterpret_cast<const T*>(w_up_v.data_ptr());
    T* o = reinterpret_cast<T*>(out.data_ptr());
    constexpr int V = 16 / int(sizeof(T));
    auto al16 = [](const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; };
    const bool vec_a = (R % 4 == 0) && al16(lat);
    const bool vec_b = (N % V == 0) && al16(wk) && al16(wv);
    const bool vec_out = ((2 * N) % 4 == 0) && ((reinterpret_cast<uintptr_t>(o) & (4 * sizeof(T) - 1)) == 0);

    const long big_blocks = long(cdiv(M, 128)) * long(cdiv(2 * N, 128));
    if (big_blocks >= sms)
        launch_up<T, 128, 128, 16, 8, 8, 256, 3, 4, 1>(lat, wk, wv, o, M, R, N, vec_a, vec_b, vec_out, dev, optin, stream);
    else
        launch_up<T, 32, 64, 16, 4, 4, 128, 3, 4, 1>(lat, wk, wv, o, M, R, N, vec_a, vec_b, vec_out, dev, optin, stream);
}

// Whether GEMM1 at M > 128 takes 64 x 128 tiles rather than 128-row ones: when the 128 x 128 tiles number fewer than
// half the SMs. Then the 64 x 128 tiles (twice as many) still fit one wave of CTAs, so twice the SMs work with half
// the k-splits (none at MiniCPM3 4096: 128 tiles); from half the SMs up they would not, and the 128-row tiles read
// each w_down column tile half as often. Counted in 128 x 128 tiles whatever MLA_GEMM1_BN is: the rule is about
// fitting the 64 x 128 tiles in one wave.
constexpr bool gemm1_rows64(int M, int R, int sms) { return kv::cdiv(M, 128) * kv::cdiv(R, 128) < sms / 2; }
// The cases it is for, on the H200 (132 SMs): MiniCPM3 4096 (R 256) and every 512-token shape take 64-row tiles,
// DeepSeek-V2-Lite / V3 4096 (R 512: 128 tiles) keep 128 x 128.
static_assert(gemm1_rows64(4096, 256, 132) && gemm1_rows64(512, 512, 132) && gemm1_rows64(512, 256, 132) &&
                  !gemm1_rows64(4096, 512, 132),
              "gemm1_rows64: the 64-row GEMM1 tile rule");

// GEMM1's CTAs per cluster at decode (0: the split-k through L2). 8 by default: 32 CTAs a 512-wide latent, each
// streaming 1/8 of w_down; 16 when d is long (64 k-steps or more, so 8 splits would run 8+ k-steps each) and 16 CTAs
// a latent tile plus every GEMM2 CTA still fit the SMs at once, so GEMM2's CTAs all start on idle SMs and load
// their w_up stages while GEMM1 runs. Measured (NOTES 2026-12-02 sixth, against the split-k through L2): 8 is
// 0.4-2.4 us faster at every 64-token preset, and 16 a further 1.3 us at kimi-k2 64 (the only preset the second
// condition admits), slower than 8 where GEMM2's CTAs do not fit (DeepSeek-V3 / V2 64: +1.7 to +1.9 us). Either
// size needs each CTA to get two k-steps or more, and such a cluster to fit on the device.
template <typename T>
int g1_cluster_size(int D, int tiles1, int gemm2_ctas, int dev, int sms) {
    const int ksteps = kv::cdiv(D, mla::BK);
    int cl = MLA_G1_CLUSTER;
    if (cl < 0) cl = (ksteps >= 64 && tiles1 * 16 + gemm2_ctas <= sms) ? 16 : 8;
    if (cl <= 1 || ksteps < 2 * cl || !mla::cluster_fits<T, 64, 128>(dev, cl)) return 0;
    return cl;
}

// Tensor-core path (sm_90a, bf16 / fp16): GEMM1 launch (latent in the dtype, split k), then GEMM2 launch as its
// programmatic dependent. BM (GEMM2's tile height): 64 up to 128 rows (decode), 128 above. GEMM1's tiles are
// BM1 x BN1: 64 x 128 for decode; above, 128 x MLA_GEMM1_BN or (gemm1_rows64) 64 x 128.
// PINGPONG (two_stage_pp) and BM 128: GEMM2 is mla_pingpong.cuh's kernel instead of mla_tc_kernel's GEMM2 units;
// GEMM1 is the same launch either way.
template <typename T, int BM, int BM1, int BN1, bool PINGPONG>
void launch_two_stage_tc(const at::Tensor& hidden, const at::Tensor& w_down, const at::Tensor& w_up_k,
                         const at::Tensor& w_up_v, at::Tensor& out, int M, int D, int R, int N, int dev,
                         int sms, cudaStream_t stream) {
    using C = mla::Cfg<BM1, BN1>;
    // GEMM1's units (tiles BM1 x BN1) and GEMM2's (BM x 256) are counted apart: the two launches share no unit list
    // (p's GEMM2 fields are unused: its launch runs units [0, units1) only).
    mla::Params p = mla::make_params(BM1, BN1, M, D, R, N, mla::pick_splits(BM1, BN1, M, R, sms, MLA_GEMM1_SPLIT_CAP));
    const mla::Params q2 = mla::make_params(BM, mla::BN, M, D, R, N, 1);
    const int tiles1 = p.n_mt * p.n_nt1;
    // Decode (64-row GEMM2 tiles): GEMM1's k-splits in clusters when g1_cluster_size says so, one cluster a tile,
    // one k-split a CTA (the last ones may be empty).
    const int cluster = BM == 64 ? g1_cluster_size<T>(D, tiles1, std::min(q2.units2, sms), dev, sms) : 0;
    if (cluster > 1) {
        p.splits = cluster;
        p.kps1 = kv::cdiv(p.ksteps1, cluster);
        p.units1 = tiles1 * cluster;
        p.cl_red = 1;
    }
    auto latent = at::empty({int64_t(M), int64_t(R)}, hidden.options());
    at::Tensor ws;
    if (p.splits > 1 && !p.cl_red) {
        ws = at::empty({int64_t(tiles1) * p.splits * C::PART_F4 * 4}, hidden.options().dtype(at::kFloat));
        p.ws = reinterpret_cast<float4*>(ws.data_ptr());
        p.split_cnt = mla::counters(dev, size_t(tiles1), stream);
    }
    p.latent = latent.data_ptr();
    const mla::Maps maps = mla::make_maps<T, BM1, BM>(hidden.data_ptr(), w_down.data_ptr(), w_up_k.data_ptr(),
                                                      w_up_v.data_ptr(), latent.data_ptr(), out.data_ptr(), M, D, R,
                                                      N, /*latent_stores=*/p.splits == 1);
    mla::set_smem_attr<T, BM1, BN1>(dev);
    mla::Params p1 = p;
    p1.first = 0;
    p1.last = p.units1;
    mla::launch<T, BM1, BN1>(maps, p1, p.cl_red ? p.units1 : std::min(p.units1, sms), false, stream,
                             p.cl_red ? cluster : 1);
    if constexpr (PINGPONG && BM == 128) {
        const mla_pp::Params q = mla_pp::make_params<T>(M, R, N, dev);
        mla_pp::set_smem_attr<T>(dev);
        mla_pp::launch<T>(maps, q, mla_pp::grid_size<T>(q, sms, dev), stream);
    } else {
        mla::set_smem_attr<T, BM>(dev);
        mla::Params p2 = q2;
        p2.latent = latent.data_ptr();
        p2.first = q2.units1;
        p2.last = q2.units1 + q2.units2;
        p2.pdl_wait = 1;
        mla::launch<T, BM>(maps, p2, std::min(q2.units2, sms), true, stream);
    }
}

// False when the shape, alignment, device or build does not allow the tensor-core path (then: the SIMT path).
template <typename T, bool PINGPONG>
bool run_two_stage_tc(const at::Tensor& hidden, const at::Tensor& w_down, const at::Tensor& w_up_k,
                      const at::Tensor& w_up_v, at::Tensor& out, int M, int D, int R, int N) {
    const int dev = hidden.get_device();
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    kv::DevInfo info;
    if (!mla::tc_path_ready(hidden, w_down, w_up_k, w_up_v, out, D, R, N, 1, PINGPONG ? mla_pp::SMEM_ALLOC : 0, dev,
                            stream, info))
        return false;
    if (M <= 128) {
        // GEMM1 in 64 x 128 tiles (against 64 x 256: -0.55 to -1.0 us at 64 tokens, results/NOTES.md), its k-splits
        // in clusters (g1_cluster_size; 4 tiles x 8 CTAs at DeepSeek-V3), else through L2 (4 tiles x 28 splits).
        launch_two_stage_tc<T, 64, 64, 128, PINGPONG>(hidden, w_down, w_up_k, w_up_v, out, M, D, R, N, dev,
                                                      info.sms, stream);
        return true;
    }
    if constexpr (MLA_GEMM1_BM64 == 1) {  // discarded (never instantiated) when 0: that build is the one of before
        if (gemm1_rows64(M, R, info.sms)) {
            launch_two_stage_tc<T, 128, 64, 128, PINGPONG>(hidden, w_down, w_up_k, w_up_v, out, M, D, R, N, dev,
                                                           info.sms, stream);
            return true;
        }
    }
    launch_two_stage_tc<T, 128, 128, MLA_GEMM1_BN, PINGPONG>(hidden, w_down, w_up_k, w_up_v, out, M, D, R, N, dev,
                                                             info.sms, stream);
    return true;
}

// The whole of a two-stage forward; PINGPONG selects the GEMM2 schedule of the tensor-core path at M > 128.
template <bool PINGPONG>
at::Tensor two_stage_forward(at::Tensor hidden, at::Tensor w_down, at::Tensor w_up_k,
                             at::Tensor w_up_v, int64_t kv_heads) {
    const kv::Problem p = kv::check_inputs(hidden, w_down, w_up_k, w_up_v, kv_heads);
    const auto dt = hidden.scalar_type();
    const int M = int(p.M), D = int(p.D), R = int(p.R), N = int(p.N);

    c10::cuda::CUDAGuard guard(hidden.device());
    auto out = kv::make_output(hidden, p);
    if (M == 0 || N == 0) return out;
    if (D == 0 || R == 0) return out.zero_();

    switch (dt) {
        case at::kFloat: run_two_stage<float>(hidden, w_down, w_up_k, w_up_v, out, M, D, R, N); break;
        case at::kBFloat16:
            if (!run_two_stage_tc<__nv_bfloat16, PINGPONG>(hidden, w_down, w_up_k, w_up_v, out, M, D, R, N))
                run_two_stage<__nv_bfloat16>(hidden, w_down, w_up_k, w_up_v, out, M, D, R, N);
            break;
        default:
            if (!run_two_stage_tc<__half, PINGPONG>(hidden, w_down, w_up_k, w_up_v, out, M, D, R, N))
                run_two_stage<__half>(hidden, w_down, w_up_k, w_up_v, out, M, D, R, N);
            break;
    }
    return out;
}

}  // namespace

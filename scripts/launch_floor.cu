// Synthetic kernels that add a small kernel's fixed costs one at a time (scripts/launch_floor.py times them the
// way the harness times a variant). Grid G blocks of T threads, S bytes of dynamic shared memory:
//   stage 0: nothing (the launch of that grid with that shared memory)
//   stage 1: + every block copies the same W bytes (a weight buffer, read by all blocks: from DRAM once, then L2)
//            and its own H bytes (its input rows) into shared memory by 16-byte cp.async, waits, __syncthreads
//   stage 2: + every block writes its own O bytes of output (from shared memory)
// With a cluster size C > 1 the grid is launched in clusters of C blocks (cudaLaunchKernelEx), and every stage ends
// with one cluster barrier (the one a design sharing data between the blocks of a cluster would need at least).
// Thread t copies / stores the 16-byte vectors t, t + T, ... (the access pattern of fused_tiled's DIRECT entry).
#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>

namespace {

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}

__global__ void floor_kernel(const float4* __restrict__ weights, int w_vec, const float4* __restrict__ rows, int h_vec,
                             float4* __restrict__ out, int o_vec, int stage, int cluster_barrier) {
    extern __shared__ float4 smem[];
    if (stage >= 1) {
        const int t = threadIdx.x, nt = blockDim.x;
        const float4* my_rows = rows + size_t(blockIdx.x) * h_vec;
        for (int i = t; i < h_vec; i += nt) cp_async16(smem + i, my_rows + i);
        for (int i = t; i < w_vec; i += nt) cp_async16(smem + h_vec + i, weights + i);
        asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
        __syncthreads();
        if (stage >= 2) {
            float4* my_out = out + size_t(blockIdx.x) * o_vec;
            for (int i = t; i < o_vec; i += nt) my_out[i] = smem[i % (h_vec + w_vec)];
        }
    }
    if (cluster_barrier) asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

}  // namespace

// weights / rows / out: float32 CUDA tensors large enough for w_vec, grid * h_vec and grid * o_vec float4s.
void floor_launch(at::Tensor weights, at::Tensor rows, at::Tensor out, int64_t grid, int64_t threads,
                  int64_t smem_bytes, int64_t w_bytes, int64_t h_bytes, int64_t o_bytes, int64_t stage,
                  int64_t cluster) {
    TORCH_CHECK(weights.is_cuda() && rows.is_cuda() && out.is_cuda(), "floor_launch: CUDA tensors expected");
    TORCH_CHECK((w_bytes + h_bytes) <= smem_bytes || stage == 0, "floor_launch: the copies do not fit smem_bytes");
    TORCH_CHECK(cluster >= 1 && grid % cluster == 0, "floor_launch: the grid must be a multiple of the cluster size");
    static int64_t attr_set = -1;  // the opt-in limit this process last set
    if (smem_bytes > 48 * 1024 && attr_set != smem_bytes) {
        C10_CUDA_CHECK(cudaFuncSetAttribute(floor_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem_bytes)));
        attr_set = smem_bytes;
    }
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(unsigned(grid));
    cfg.blockDim = dim3(unsigned(threads));
    cfg.dynamicSmemBytes = size_t(smem_bytes);
    cfg.stream = at::cuda::getCurrentCUDAStream();
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = unsigned(cluster);
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = cluster > 1 ? 1 : 0;  // a plain launch when 1: the harness's kernels are launched that way
    C10_CUDA_CHECK(cudaLaunchKernelEx(&cfg, floor_kernel, reinterpret_cast<const float4*>(weights.data_ptr()),
                                      int(w_bytes / 16), reinterpret_cast<const float4*>(rows.data_ptr()),
                                      int(h_bytes / 16), reinterpret_cast<float4*>(out.data_ptr()), int(o_bytes / 16),
                                      int(stage), int(cluster > 1)));
}

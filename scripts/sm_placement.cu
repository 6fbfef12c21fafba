// Where the block scheduler puts a grid's blocks (scripts/sm_placement.py): every block records %smid at its entry
// into out[linear block id], then waits hold_ns on %globaltimer so that all blocks of the grid are resident at once
// (as a persistent GEMM's are). Dynamic shared memory sized by the caller keeps one block per SM. With a cluster
// size C > 1 the grid is launched in clusters of C along x (hop::launch_ex): the blocks of a cluster share a GPC,
// which is how the caller groups SMs into GPCs.
#include "hopper.cuh"  // kernels/ (the build's include path): hop::launch_ex

#include <c10/cuda/CUDAStream.h>

namespace {

__global__ void placement_kernel(int* __restrict__ out, long long hold_ns) {
    extern __shared__ int smem[];
    if (threadIdx.x == 0) {
        unsigned smid;
        asm volatile("mov.u32 %0, %%smid;\n" : "=r"(smid));
        const int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
        smem[0] = int(smid);  // touch the shared memory the launch asked for
        out[b] = smem[0];
        unsigned long long t0, t;
        asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t0));
        do {
            asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
        } while (t - t0 < (unsigned long long)hold_ns);
    }
}

}  // namespace

void placement_launch(at::Tensor out, int64_t gx, int64_t gy, int64_t threads, int64_t smem_bytes,
                      int64_t cluster, int64_t hold_ns) {
    TORCH_CHECK(out.is_cuda() && out.scalar_type() == at::kInt && out.numel() >= gx * gy,
                "placement_launch: out must be a CUDA int32 tensor of at least gx * gy elements");
    TORCH_CHECK(cluster >= 1 && gx % cluster == 0, "placement_launch: gx must be a multiple of the cluster size");
    C10_CUDA_CHECK(cudaFuncSetAttribute(placement_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        int(smem_bytes)));
    if (cluster > 8)
        C10_CUDA_CHECK(cudaFuncSetAttribute(placement_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    hop::LaunchShape shape;  // hop::launch_ex adds the cluster attribute only for a cluster of more than one block
    shape.grid = dim3(unsigned(gx), unsigned(gy), 1);
    shape.block = dim3(unsigned(threads), 1, 1);
    shape.smem_bytes = int(smem_bytes);
    shape.cluster = dim3(unsigned(cluster), 1, 1);
    hop::launch_ex(placement_kernel, shape, at::cuda::getCurrentCUDAStream(), out.data_ptr<int>(),
                   (long long)hold_ns);
}

// How many 2-CTA clusters of a 384-thread, ~209 KB-smem kernel fit at once (mla_tc's BM 128 GEMM2 config).
#include <cstdio>
#include <cuda_runtime.h>
__global__ void k(int* p) { extern __shared__ int s[]; if (p) p[0] = s[threadIdx.x]; }
int main() {
  int dev = 0, sms = 0; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  for (int smem : {100 * 1024, 160 * 1024, 209 * 1024, 227 * 1024}) {
    cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    for (int c : {1, 2, 4}) {
      cudaLaunchConfig_t cfg = {}; cfg.gridDim = dim3(sms & ~(c - 1)); cfg.blockDim = dim3(384); cfg.dynamicSmemBytes = smem;
      cudaLaunchAttribute a[1]; a[0].id = cudaLaunchAttributeClusterDimension; a[0].val.clusterDim.x = c; a[0].val.clusterDim.y = 1; a[0].val.clusterDim.z = 1;
      cfg.attrs = a; cfg.numAttrs = 1; int n = -1; cudaError_t e = cudaOccupancyMaxActiveClusters(&n, k, &cfg);
      printf("sms %d smem %d KB cluster %d: max active clusters %d (%s) = %d CTAs\n", sms, smem / 1024, c, n, cudaGetErrorString(e), n * c);
    }
  }
}

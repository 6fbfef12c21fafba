/*
 * Helpers for the timing stage, built like any variant.
 *
 * blocker: one thread spins on a flag in mapped host memory, so the stream stays busy while the
 * host queues every timed launch; then the host releases it and the queued work runs back to back,
 * with no host launch gaps inside the timed events (nvbench's blocking kernel). The spin gives up
 * after a timeout (a timed call that synchronizes would otherwise deadlock) and says so in flags[1].
 *
 * empty_launch: one empty kernel, the launch floor every small-shape variant is judged against.
 *
 * reset_persisting_l2 / persisting_l2_state: no persisting-L2 access window on the current stream and a
 * persisting-L2 limit of 0 before timing. Lines marked persisting survive the L2 flush, so a cold sample
 * would read them at L2 speed (llm.c #851 measured such a window at 4x HBM bandwidth).
 */
#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>

__global__ void empty_kernel() {}

__global__ void spin_until_released(volatile int* flags, unsigned long long timeout_ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  while (flags[0] == 0) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > timeout_ns) {
      flags[1] = 1;
      __threadfence_system();
      return;
    }
    __nanosleep(200);
  }
}

void empty_launch() {
  empty_kernel<<<1, 1, 0, at::cuda::getCurrentCUDAStream()>>>();
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

int64_t blocker_create() {
  int* flags = nullptr;
  C10_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&flags), 2 * sizeof(int),
                               cudaHostAllocMapped | cudaHostAllocPortable));
  flags[0] = 1;
  flags[1] = 0;
  return reinterpret_cast<int64_t>(flags);
}

void blocker_destroy(int64_t handle) {
  C10_CUDA_CHECK(cudaFreeHost(reinterpret_cast<void*>(handle)));
}

void blocker_hold(int64_t handle, double timeout_s) {
  volatile int* flags = reinterpret_cast<volatile int*>(handle);
  flags[0] = 0;
  flags[1] = 0;
  int* device_flags = nullptr;
  C10_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_flags),
                                          reinterpret_cast<void*>(handle), 0));
  spin_until_released<<<1, 1, 0, at::cuda::getCurrentCUDAStream()>>>(
      device_flags, static_cast<unsigned long long>(timeout_s * 1e9));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void blocker_release(int64_t handle) {
  volatile int* flags = reinterpret_cast<volatile int*>(handle);
  flags[0] = 1;
  __sync_synchronize();
}

bool blocker_timed_out(int64_t handle) {
  return reinterpret_cast<volatile int*>(handle)[1] != 0;
}

// Returns whether the device accepted the limit (it may be unsupported, e.g. under MIG).
bool reset_persisting_l2() {
  cudaStreamAttrValue window = {};
  window.accessPolicyWindow.num_bytes = 0;  // no window
  window.accessPolicyWindow.hitProp = cudaAccessPropertyNormal;
  window.accessPolicyWindow.missProp = cudaAccessPropertyNormal;
  C10_CUDA_CHECK(cudaStreamSetAttribute(at::cuda::getCurrentCUDAStream(), cudaStreamAttributeAccessPolicyWindow,
                                        &window));
  bool limited = cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0) == cudaSuccess;
  bool reset = cudaCtxResetPersistingL2Cache() == cudaSuccess;  // lines already persisting become normal
  cudaGetLastError();  // an unsupported limit is not an error of the next call
  return limited && reset;
}

// {persisting-L2 limit in bytes, access-policy window bytes on the current stream}
std::vector<int64_t> persisting_l2_state() {
  size_t limit = 0;
  if (cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize) != cudaSuccess) {
    cudaGetLastError();
    limit = 0;
  }
  cudaStreamAttrValue window = {};
  C10_CUDA_CHECK(cudaStreamGetAttribute(at::cuda::getCurrentCUDAStream(), cudaStreamAttributeAccessPolicyWindow,
                                        &window));
  return {static_cast<int64_t>(limit), static_cast<int64_t>(window.accessPolicyWindow.num_bytes)};
}

// For the GPU test: what a variant might do to read its inputs from L2 on every call.
void set_persisting_l2(int64_t limit_bytes, int64_t ptr, int64_t window_bytes) {
  C10_CUDA_CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, static_cast<size_t>(limit_bytes)));
  cudaStreamAttrValue window = {};
  window.accessPolicyWindow.base_ptr = reinterpret_cast<void*>(ptr);
  window.accessPolicyWindow.num_bytes = static_cast<size_t>(window_bytes);
  window.accessPolicyWindow.hitRatio = 1.0f;
  window.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  window.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  C10_CUDA_CHECK(cudaStreamSetAttribute(at::cuda::getCurrentCUDAStream(), cudaStreamAttributeAccessPolicyWindow,
                                        &window));
}

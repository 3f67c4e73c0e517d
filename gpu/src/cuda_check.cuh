// Error checking for every CUDA runtime, cuBLAS and cuBLASLt call, and RAII wrappers.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "fm/gpu/resources.h"

namespace fm::gpu::detail {

[[noreturn]] void ThrowCudaError(cudaError_t err, const char* expr, const char* file, int line);
[[noreturn]] void ThrowCublasError(cublasStatus_t st, const char* expr, const char* file, int line);

}  // namespace fm::gpu::detail

#define FM_CUDA_CHECK(expr)                                                   \
  do {                                                                        \
    cudaError_t fm_err_ = (expr);                                             \
    if (fm_err_ != cudaSuccess)                                               \
      ::fm::gpu::detail::ThrowCudaError(fm_err_, #expr, __FILE__, __LINE__);  \
  } while (0)

#define FM_CUBLAS_CHECK(expr)                                                  \
  do {                                                                         \
    cublasStatus_t fm_st_ = (expr);                                            \
    if (fm_st_ != CUBLAS_STATUS_SUCCESS)                                       \
      ::fm::gpu::detail::ThrowCublasError(fm_st_, #expr, __FILE__, __LINE__);  \
  } while (0)

// After a kernel launch: always checks the launch; with FM_CUDA_SYNC_CHECK also synchronises.
#ifdef FM_CUDA_SYNC_CHECK
#define FM_CUDA_CHECK_LAUNCH()                    \
  do {                                            \
    FM_CUDA_CHECK(cudaGetLastError());            \
    FM_CUDA_CHECK(cudaDeviceSynchronize());       \
  } while (0)
#else
#define FM_CUDA_CHECK_LAUNCH() FM_CUDA_CHECK(cudaGetLastError())
#endif

namespace fm::gpu::detail {

// Raises a kernel's dynamic shared-memory limit to `bytes` on the current device, once per device
// (the attribute belongs to the device's context); `done` is the call site's mask of devices.
template <typename Kernel>
void SetMaxDynamicShared(Kernel kernel, int bytes, std::atomic<uint64_t>& done) {
  int dev = 0;
  FM_CUDA_CHECK(cudaGetDevice(&dev));
  const uint64_t bit = dev >= 0 && dev < 64 ? uint64_t{1} << dev : 0;
  if (bit != 0 && (done.load(std::memory_order_relaxed) & bit) != 0) return;
  FM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  done.fetch_or(bit, std::memory_order_relaxed);
}

// Owning device allocation of n elements of T (uninitialised).
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n) { Resize(n); }
  ~DeviceBuffer() { Release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      Release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  // Reallocates when n is larger than the current size; contents are not kept.
  void Resize(std::size_t n) {
    if (n <= size_) return;
    Release();
    if (n == 0) return;
    cudaError_t err = cudaMalloc(reinterpret_cast<void**>(&ptr_), n * sizeof(T));
    if (err != cudaSuccess) {
      ptr_ = nullptr;
      ThrowCudaError(err, "cudaMalloc", __FILE__, __LINE__);
    }
    size_ = n;
  }
  void Release() noexcept {
    if (ptr_) cudaFree(ptr_);
    ptr_ = nullptr;
    size_ = 0;
  }
  T* data() const { return ptr_; }
  std::size_t size() const { return size_; }

 private:
  T* ptr_ = nullptr;
  std::size_t size_ = 0;
};

// Owning pinned host allocation.
template <typename T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t n) {
    if (n) FM_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&ptr_), n * sizeof(T)));
    size_ = n;
  }
  ~PinnedBuffer() {
    if (ptr_) cudaFreeHost(ptr_);
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  PinnedBuffer(PinnedBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  T* data() const { return ptr_; }
  std::size_t size() const { return size_; }

 private:
  T* ptr_ = nullptr;
  std::size_t size_ = 0;
};

class CudaEvent {
 public:
  CudaEvent() { FM_CUDA_CHECK(cudaEventCreate(&ev_)); }
  ~CudaEvent() { cudaEventDestroy(ev_); }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  cudaEvent_t get() const { return ev_; }

 private:
  cudaEvent_t ev_{};
};

// Makes `device` current for the scope and restores the previous device afterwards.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    FM_CUDA_CHECK(cudaGetDevice(&prev_));
    if (prev_ != device) FM_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceScope() { cudaSetDevice(prev_); }

 private:
  int prev_ = 0;
};

inline cudaStream_t AsStream(void* s) { return static_cast<cudaStream_t>(s); }

}  // namespace fm::gpu::detail

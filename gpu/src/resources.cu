#include <cstdio>
#include <string>
#include <vector>

#include "cuda_check.cuh"
#include "fm/gpu/resources.h"

namespace fm::gpu {
namespace detail {

void ThrowCudaError(cudaError_t err, const char* expr, const char* file, int line) {
  std::string msg = std::string("CUDA error ") + cudaGetErrorName(err) + " (" +
                    cudaGetErrorString(err) + ") in " + expr + " at " + file + ":" +
                    std::to_string(line);
  if (err == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // clear the sticky-free allocation error
    throw GpuOutOfMemory(msg + "; lower the GPU memory budget or the batch size");
  }
  throw GpuError(msg);
}

void ThrowCublasError(cublasStatus_t st, const char* expr, const char* file, int line) {
  std::string msg = std::string("cuBLAS error ") + cublasGetStatusName(st) + " (" +
                    cublasGetStatusString(st) + ") in " + expr + " at " + file + ":" +
                    std::to_string(line);
  if (st == CUBLAS_STATUS_ALLOC_FAILED) throw GpuOutOfMemory(msg);
  throw GpuError(msg);
}

}  // namespace detail

using detail::DeviceScope;

int DeviceCount() {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

DeviceInfo GetDeviceInfo(int ordinal) {
  int n = DeviceCount();
  if (ordinal < 0 || ordinal >= n) {
    throw GpuError("GPU " + std::to_string(ordinal) + " does not exist (" + std::to_string(n) +
                   " device(s) found)");
  }
  cudaDeviceProp prop{};
  FM_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal));
  DeviceInfo info;
  info.ordinal = ordinal;
  info.name = prop.name;
  info.sm_major = prop.major;
  info.sm_minor = prop.minor;
  info.multiprocessors = prop.multiProcessorCount;
  info.total_memory = prop.totalGlobalMem;
  DeviceScope scope(ordinal);
  std::size_t free_b = 0, total_b = 0;
  FM_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  info.free_memory = free_b;
  return info;
}

struct Resources::Impl {
  int device = 0;
  cudaStream_t stream{};
  std::vector<cudaStream_t> aux;
  cublasHandle_t cublas{};
  cublasLtHandle_t cublaslt{};
};

Resources::Resources(int device) : impl_(std::make_unique<Impl>()) {
  int n = DeviceCount();
  if (n == 0) throw GpuError("no CUDA device is available");
  if (device < 0 || device >= n) {
    throw GpuError("GPU " + std::to_string(device) + " does not exist (" + std::to_string(n) +
                   " device(s) found)");
  }
  impl_->device = device;
  DeviceScope scope(device);
  FM_CUDA_CHECK(cudaStreamCreateWithFlags(&impl_->stream, cudaStreamNonBlocking));
  impl_->aux.resize(2);
  for (auto& s : impl_->aux) FM_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  FM_CUBLAS_CHECK(cublasCreate(&impl_->cublas));
  FM_CUBLAS_CHECK(cublasSetStream(impl_->cublas, impl_->stream));
  FM_CUBLAS_CHECK(cublasLtCreate(&impl_->cublaslt));
}

Resources::~Resources() {
  if (!impl_) return;
  cudaSetDevice(impl_->device);
  if (impl_->cublaslt) cublasLtDestroy(impl_->cublaslt);
  if (impl_->cublas) cublasDestroy(impl_->cublas);
  for (auto s : impl_->aux) cudaStreamDestroy(s);
  if (impl_->stream) cudaStreamDestroy(impl_->stream);
}

int Resources::device() const { return impl_->device; }
void* Resources::stream() const { return impl_->stream; }
void* Resources::aux_stream(int i) const { return impl_->aux.at(static_cast<std::size_t>(i)); }
int Resources::num_aux_streams() const { return static_cast<int>(impl_->aux.size()); }
void* Resources::cublas_handle() const { return impl_->cublas; }
void* Resources::cublaslt_handle() const { return impl_->cublaslt; }
void Resources::Synchronize() const {
  DeviceScope scope(impl_->device);
  FM_CUDA_CHECK(cudaStreamSynchronize(impl_->stream));
  for (auto s : impl_->aux) FM_CUDA_CHECK(cudaStreamSynchronize(s));
}

}  // namespace fm::gpu

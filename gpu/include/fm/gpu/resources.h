// Device discovery and the per-device resources object (streams, cuBLAS handles, workspace).
// Plain C++: no CUDA header is needed to use it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace fm::gpu {

// Thrown for every CUDA/cuBLAS failure, with file, line and the library's message.
class GpuError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown when a request does not fit in GPU memory (a subclass so callers can fall back).
class GpuOutOfMemory : public GpuError {
 public:
  using GpuError::GpuError;
};

struct DeviceInfo {
  int ordinal = -1;
  std::string name;
  int sm_major = 0;
  int sm_minor = 0;
  int multiprocessors = 0;
  std::size_t total_memory = 0;
  std::size_t free_memory = 0;
};

// Number of usable CUDA devices; 0 when there is no driver or no device (never throws).
int DeviceCount();
// Properties of one device. Throws GpuError for a bad ordinal.
DeviceInfo GetDeviceInfo(int ordinal);

// Owns what GPU work on one device needs: a main stream, auxiliary streams for overlap, the
// cuBLAS / cuBLASLt handles and a scratch workspace. Not thread-safe: one per host thread.
class Resources {
 public:
  explicit Resources(int device = 0);
  ~Resources();
  Resources(const Resources&) = delete;
  Resources& operator=(const Resources&) = delete;

  int device() const;
  // cudaStream_t of the main stream, as an opaque pointer.
  void* stream() const;
  // Auxiliary stream i (0 <= i < num_aux_streams()).
  void* aux_stream(int i) const;
  int num_aux_streams() const;
  void* cublas_handle() const;
  void* cublaslt_handle() const;
  // Waits for all work queued on the resources' streams.
  void Synchronize() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fm::gpu

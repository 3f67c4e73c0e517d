// Work sharing for the CPU kNN kernels: threads take blocks from a shared counter until none are
// left. The first exception thrown by any worker stops the others and is rethrown to the caller;
// a cancel flag set while they run does the same with core::Cancelled.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "fm/core/knn.h"

namespace fm::core::detail {

// Calls worker(next) on `threads` threads (the calling thread alone when threads <= 1); inside,
// `for (int64_t b; next(b);)` visits each of the blocks 0 .. blocks-1 exactly once overall, or
// throws Cancelled (caught and rethrown here) once `cancel` is set.
template <typename Worker>
void RunBlocks(int64_t blocks, int threads, Worker worker,
               const std::atomic<bool>* cancel = nullptr) {
  std::atomic<int64_t> counter{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto next = [&](int64_t& b) {
    ThrowIfCancelled(cancel);
    b = counter.fetch_add(1);
    return b < blocks;
  };
  auto run = [&] {
    try {
      worker(next);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      counter.store(blocks);
    }
  };
  if (threads <= 1) {
    run();
  } else {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(run);
    for (auto& t : pool) t.join();
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace fm::core::detail

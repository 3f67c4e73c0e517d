// Launchers of the selection kernels, one per algorithm and bucket of k (KB = 32, 64, ..., 2048:
// the kernel handles any k <= KB). Each bucket is instantiated in its own small .cu file.
#pragma once

#include "select/select_common.cuh"

namespace fm::gpu::detail {

template <int KB>
void LaunchTbis(const SelectArgs& a);
template <int KB>
void LaunchMergeQueue(const SelectArgs& a);
template <int KB>
void LaunchQuickMultiSelect(const SelectArgs& a);
// Whether LaunchQuickMultiSelect<KB> takes the rows of `a` by its row-parallel path.
template <int KB>
bool QmsSplitSuits(const SelectArgs& a);
// Baseline: CUB segmented radix sort of every row, then the first k (any k).
void LaunchSortTruncate(const SelectArgs& a);

}  // namespace fm::gpu::detail

namespace fm::gpu::detail {

// Scratch device memory for one selection on `stream` (grow-only, cached per host thread, device,
// stream and slot; valid until the next call with the same stream and slot). Slot 0 holds the
// pieces of cut rows between their two passes, slot 1 a kernel's own scratch.
void* SelectWorkspace(std::size_t bytes, cudaStream_t stream, int slot);

}  // namespace fm::gpu::detail

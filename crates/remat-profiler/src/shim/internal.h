// What the files of src/shim/ share, inside the shim: the counting
// allocator's block header and serial numbers (memory.cpp), the error
// guard every C function runs its body in, and the storage moves
// (storages.cpp) that saved.cpp and cuda.cpp call. The C API Rust calls is
// remat_shim.h.
#pragma once

#include <torch/torch.h>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

namespace remat_shim {

constexpr size_t kHeader = 64;  // keeps c10's 64-byte alignment for the data

// The header stores the size and whether it was a host allocation, so the
// deleter (which gets only the data pointer) can undo exactly what was counted.
struct Header {
  int64_t bytes;
  int64_t host;
  int64_t serial;
};

// Allocation serial numbers: a storage allocated after a recording forward
// began has a serial at least the one read then (saved.cpp's SavedStorages;
// on a GPU cuda.cpp's allocator trace gives CUDA blocks theirs).
extern std::atomic<int64_t> g_serial;

// The last error of a C function on this thread (remat_last_error()).
extern thread_local std::string g_error;

// Set by remat_cuda_init: the memory interface reads the CUDA caching
// allocator instead of the counting CPU allocator.
extern bool g_cuda;

// The counting allocator's deleter: what `allocate_counted` gave back.
void counted_delete(void* data);

// `n` bytes booked as host (offloaded copies) or device memory.
c10::DataPtr allocate_counted(size_t n, bool host);

// Runs `body` and returns what it returns; a C++ exception (which must not
// cross the C ABI into Rust) becomes `on_error`, its message kept for
// remat_last_error().
template <typename T, typename Body>
T guarded(T on_error, Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    g_error = e.what();
    return on_error;
  }
}

// storages.cpp: gives storage `s` new bytes and repoints its borrowers,
// returning the old block; moves a storage's bytes to host or device memory.
c10::DataPtr replace_bytes(c10::StorageImpl* s, c10::DataPtr fresh);
int64_t move_storage(c10::StorageImpl* s, bool to_host);

#ifdef REMAT_CUDA
// cuda.cpp: the memory interface and storage moves on the GPU.
int64_t cuda_serial_of(const void* ptr);
int64_t cuda_move_storage(c10::StorageImpl* s, bool to_host);
int64_t cuda_current();
int64_t cuda_peak();
int64_t cuda_total();
int64_t cuda_total_peak();
void cuda_reset_peak();
void cuda_book_outside(int64_t bytes);
#endif

}  // namespace remat_shim

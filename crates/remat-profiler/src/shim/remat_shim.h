// The C API of remat-profile's libtorch shim: every function Rust calls
// (declared once more, by hand, in src/torch/c_api.rs; the test
// tests/c_api.rs checks that both list the same functions with the same
// number of parameters). Each file of src/shim/ includes this header, so
// the compiler checks every definition against its declaration here.
//
// The few libtorch calls tch does not expose, one file per concern:
//  - memory.cpp: a counting CPU allocator, exact current / peak bytes of
//    every tensor libtorch allocates on the CPU, split into "device" (the
//    activations a budget counts) and "host" (offloaded copies, which a
//    budget does not); parameter gradients can be booked outside the device
//    count (they are outside the chain, like the weights), while the raw
//    total keeps them. The backend switches: oneDNN on (PyTorch's CPU
//    default; ideep allocates its tensors and scratchpads through c10's CPU
//    allocator, so they are counted — docs/profiler.md has the evidence),
//    NNPACK off (its workspace is a static buffer allocated outside c10).
//  - autograd.cpp: backward from a given output gradient, and taking a
//    leaf's .grad out of it, so that δ is freed when Rust drops it.
//  - saved.cpp: the storages a stage's graph saved for its backward (ā^ℓ),
//    found with saved-tensor hooks, moved to host memory and back.
//  - storages.cpp: a storage's bytes replaced under every alias: released
//    (R of dtr / delta), recomputed values put back, moved to the host and
//    back.
//  - cuda.cpp, with REMAT_CUDA (cargo feature `cuda`, build.rs): the same
//    memory interface read from the CUDA caching allocator's device
//    statistics, CUDA events for op times, and offload / prefetch between
//    device memory and pinned host memory on a side stream.
//  - torchscript.cpp: the user's own network loaded from TorchScript.
//  - internal.h: what those files share inside the shim.
//
// Errors never cross the C ABI: a function that can fail returns a code and
// keeps the message for remat_last_error() (remat_ts_last_error() for
// TorchScript).
#pragma once

#include <cstdint>

namespace at {
class Tensor;
}

extern "C" {

// --- Memory (memory.cpp) ---------------------------------------------------

// Installs the counting allocator (idempotent) and sets the backends: oneDNN
// on, as PyTorch runs on the CPU by default (its memory goes through c10's
// CPU allocator: ideep registers c10::GetAllocator(CPU) as its engine's
// allocator and runs every primitive with a user scratchpad); NNPACK off
// (its workspace is a static buffer allocated outside c10).
void remat_install_allocator();

// Device bytes now allocated (those booked outside excluded), their peak
// since remat_reset_peak(); every device byte, and its peak. On a GPU (after remat_cuda_init) the device counts
// read the CUDA caching allocator.
int64_t remat_current_bytes();
int64_t remat_peak_bytes();
int64_t remat_total_bytes();
int64_t remat_total_peak_bytes();

// Both peaks back to the current levels.
void remat_reset_peak();

// Books `bytes` outside the device count (> 0) or back into it (< 0): the
// raw total is unchanged, the device count and its peak follow.
void remat_book_outside(int64_t bytes);

// While on, new allocations are booked as host memory.
void remat_set_host_mode(int on);

// The last error of a function here on this thread.
const char* remat_last_error();

// --- Autograd (autograd.cpp) -----------------------------------------------

// Runs the backward of `out`'s graph seeded with `grad` (δ^ℓ), freeing the
// graph (and what it saved) as autograd does. `out` is emptied first, so only
// the graph keeps a^ℓ alive, and only if a backward formula needs it; δ^ℓ
// goes through a HandOver root, so only the engine keeps it, until its last
// reader has run. Returns 0, or 1 with remat_last_error() set.
int remat_backward(at::Tensor* out, at::Tensor* grad);

// Bytes the allocator gave the tensor's storage (0 if undefined).
int64_t remat_storage_bytes(at::Tensor* t);

// The leaf's .grad, moved out of it (an undefined tensor if it has none).
at::Tensor* remat_take_grad(at::Tensor* leaf);

// --- Saved storages (saved.cpp: offloading ā^ℓ and a^ℓ) ------------------

// Makes autograd ask us for saved-tensor hooks (idempotent).
void remat_install_saved_hooks();

// A set of saved storages, and its end.
void* remat_storages_new();
void remat_storages_free(void* set);

// From now until remat_storages_record_end(), every tensor autograd saves and
// that was allocated from now on is registered with `set`.
void remat_storages_record_begin(void* set);
void remat_storages_record_end();

// Registers `t`'s storage (when allocated since the recording began; any
// storage of the counting allocator for a set that never recorded).
void remat_storages_add(void* set, at::Tensor* t);

// Moves every live storage of the set to host (to_host = 1) or device
// memory. Returns the bytes moved, or -1 with remat_last_error() set.
int64_t remat_storages_move(void* set, int to_host);

// --- Releasing and restoring storages (storages.cpp) -----------------------

// R(a^ℓ) / R(ā^ℓ): frees the bytes of `t`'s storage under every alias (see
// "Releasing a^ℓ at the storage level"). Returns the bytes freed, or -1
// with remat_last_error() set.
int64_t remat_storage_discard(at::Tensor* t);

// Puts `fresh`'s values back under `old`'s released storage: 0 nothing else
// reads it, 1 moved (keep `old`), 2 borrowed (keep `fresh`); -1 with
// remat_last_error() set.
int remat_storage_restore(at::Tensor* old, at::Tensor* fresh, int allow_move);

// Whether both tensors are defined and share one storage.
int remat_same_storage(at::Tensor* a, at::Tensor* b);

// --- The user's network from TorchScript (torchscript.cpp) -----------------

// The last TorchScript error on this thread; a set of stages, and its end.
const char* remat_ts_last_error();
void* remat_ts_new();
void remat_ts_free(void* s);

// Loads `path` on the CPU in train mode. split = 1: each child of the module
// (a scripted nn.ModuleList or nn.Sequential) is a stage, in order; split =
// 0: the module is one stage. `prefix` names its parameters. A parameter
// that two stages share (a language model's tied embedding, saved in one
// file) is listed once: TorchScript keeps the sharing, but the C++
// named_parameters lists it under each owner, and listed twice its gradient
// would be counted and compared twice. Returns 0, or 1 with the error.
int remat_ts_add(void* set, const char* path, int split, const char* prefix);

// The stages loaded, stage i's name; the parameters, parameter k's name.
int64_t remat_ts_len(void* set);
const char* remat_ts_name(void* set, int64_t i);
int64_t remat_ts_num_params(void* set);
const char* remat_ts_param_name(void* set, int64_t k);

// The parameter itself (a new handle on the same tensor).
at::Tensor* remat_ts_param(void* set, int64_t k);

// Stage i's forward on x (and the target, for the loss stage when given).
// Returns a new tensor, or nullptr with the error.
at::Tensor* remat_ts_forward(void* set, int64_t i, at::Tensor* x, at::Tensor* target);

// Writes the tiny net (for 3×16×16 images, 10 classes) as TorchScript:
// one Sequential-like module whose children "0".."7" are the stages
// (dir = 0: `path` is the file), or stage_001.pt … stage_008.pt in the
// folder `path` (dir = 1). The last stage takes (x, target) and returns the
// mean cross-entropy. Returns 0, or 1 with the error.
int remat_ts_write_example(const char* path, int dir);

#ifdef REMAT_CUDA
// --- CUDA (cuda.cpp) -------------------------------------------------------

// Selects the GPU (device 0) for the memory interface above. Returns 0, 1
// when no CUDA device is visible, 2 on another error; remat_last_error()
// says which.
int remat_cuda_init();

// Waits for the GPU and frees every device block an offload left.
int remat_cuda_synchronize();

// At an op boundary: frees the device blocks whose offload copy finished.
int remat_cuda_op_boundary();

// The reserved (cached) peak since the last reset: what the device really
// held, of which remat_total_peak_bytes() was allocated.
int64_t remat_cuda_reserved_peak_bytes();

// Records a timing event on the compute stream (an op boundary) and
// returns it (null with remat_last_error() set); remat_cuda_event_free
// releases it.
void* remat_cuda_mark();

// Seconds from event `a` to event `b`, waiting for `b`; -1 with
// remat_last_error() set.
double remat_cuda_elapsed(void* a, void* b);

// Frees an event of remat_cuda_mark().
void remat_cuda_event_free(void* e);

// Pinned host <-> device copy rate (bytes/s) of `bytes`, on the side stream:
// the median over `reps` round trips (one device-to-host and one
// host-to-device copy each) after one warm-up trip, which also pays for the
// first pinned allocation. Returns -1 with remat_last_error() set.
double remat_cuda_bandwidth(int64_t bytes, int reps);
#endif  // REMAT_CUDA

}  // extern "C"

// CUDA (cargo feature `cuda`; build.rs defines REMAT_CUDA and links
// libtorch_cuda / libc10_cuda): the memory interface read from the caching
// allocator, timing events, and offload / prefetch on a side stream.
// Compile-checked only: never run on a GPU.
#ifdef REMAT_CUDA
#include <ATen/core/CachingHostAllocator.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/torch.h>
#include <algorithm>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "internal.h"
#include "remat_shim.h"

using namespace remat_shim;

// Memory: the caching allocator's device statistics (allocated bytes,
// aggregate pool), current and peak, on device 0. The chain's accounting
// books parameter gradients outside the count (remat_book_outside); the
// allocator's peak is of raw bytes, so each booking closes a segment: the
// segment's peak minus what was booked outside during it is folded into
// `peak_acc`, and the allocator's peak is reset. Within a segment the booked
// amount is constant, so peak() is exact, as on the CPU.
//
// Saved storages: the counting allocator's serial numbers are replaced by an
// allocator trace tracker that gives every live CUDA block a serial when it
// is allocated (same global counter), so "allocated since the recording
// began" means the same on both devices.
//
// Offload / prefetch: a storage's bytes are copied between its device block
// and a pinned host block (the CUDA host caching allocator) on a side
// stream, and its DataPtr is swapped in place as on the CPU. Ordering: the
// side stream first waits for the compute stream (the data is ready, a
// reused device block is free); a prefetch makes the compute stream wait for
// the copy. The device block an offload leaves is kept until its copy has
// finished (an event) and freed at the next op boundary after that (or at a
// synchronisation): freeing it before would let the allocator hand it out
// while the copy still reads it, or count it free while it is not — the
// reference runs saw that exceed the budget.
namespace remat_shim {

using c10::CachingDeviceAllocator::TraceEntry;

struct PendingFree {
  c10::DataPtr block;  // the device block an offload copies from
  cudaEvent_t copied;  // recorded on the side stream after the copy
};

struct CudaState {
  c10::DeviceIndex device = 0;
  int64_t outside = 0;           // bytes booked outside the chain
  int64_t peak_acc = 0;          // chain-accounted peak of closed segments
  int64_t total_peak_acc = 0;    // raw allocated peak of closed segments
  int64_t reserved_peak_acc = 0;  // reserved peak of closed segments
  std::mutex mu;                 // guards serials (the tracker runs in the allocator)
  std::unordered_map<uintptr_t, int64_t> serials;
  std::deque<PendingFree> pending;
  c10::optional<c10::cuda::CUDAStream> side;
};

CudaState& cuda_state() {
  // Leaked on purpose, like the engine: no destructor at exit.
  static CudaState* s = new CudaState();
  return *s;
}

void cuda_check(cudaError_t e, const char* what) {
  TORCH_CHECK(e == cudaSuccess, "remat: ", what, ": ", cudaGetErrorString(e));
}

constexpr size_t kAggregate = static_cast<size_t>(c10::CachingDeviceAllocator::StatType::AGGREGATE);

c10::CachingDeviceAllocator::Stat allocated_stat() {
  return c10::cuda::CUDACachingAllocator::getDeviceStats(cuda_state().device)
      .allocated_bytes[kAggregate];
}

c10::CachingDeviceAllocator::Stat reserved_stat() {
  return c10::cuda::CUDACachingAllocator::getDeviceStats(cuda_state().device)
      .reserved_bytes[kAggregate];
}

void on_trace(const TraceEntry& e) {
  if (e.action_ == TraceEntry::ALLOC) {
    std::lock_guard<std::mutex> lock(cuda_state().mu);
    cuda_state().serials[e.addr_] = g_serial.fetch_add(1);
  } else if (e.action_ == TraceEntry::FREE_REQUESTED) {
    std::lock_guard<std::mutex> lock(cuda_state().mu);
    cuda_state().serials.erase(e.addr_);
  }
}

int64_t cuda_serial_of(const void* ptr) {
  std::lock_guard<std::mutex> lock(cuda_state().mu);
  auto it = cuda_state().serials.find(reinterpret_cast<uintptr_t>(ptr));
  // Unknown blocks (allocated before the tracker) are older than any recording.
  return it == cuda_state().serials.end() ? -1 : it->second;
}

int64_t cuda_current() { return allocated_stat().current - cuda_state().outside; }
int64_t cuda_total() { return allocated_stat().current; }
int64_t cuda_peak() {
  return std::max(cuda_state().peak_acc, allocated_stat().peak - cuda_state().outside);
}
int64_t cuda_total_peak() { return std::max(cuda_state().total_peak_acc, allocated_stat().peak); }
int64_t cuda_reserved_peak() {
  return std::max(cuda_state().reserved_peak_acc, reserved_stat().peak);
}

void cuda_reset_peak() {
  CudaState& st = cuda_state();
  c10::cuda::CUDACachingAllocator::resetPeakStats(st.device);
  st.peak_acc = allocated_stat().current - st.outside;
  st.total_peak_acc = allocated_stat().current;
  st.reserved_peak_acc = reserved_stat().current;
}

void cuda_book_outside(int64_t bytes) {
  CudaState& st = cuda_state();
  // Close the segment booked with the old amount.
  st.peak_acc = cuda_peak();
  st.total_peak_acc = cuda_total_peak();
  st.reserved_peak_acc = cuda_reserved_peak();
  c10::cuda::CUDACachingAllocator::resetPeakStats(st.device);
  st.outside += bytes;
  st.peak_acc = std::max(st.peak_acc, cuda_current());
}

cudaEvent_t record_event(cudaStream_t stream) {
  cudaEvent_t e;
  cuda_check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
  cuda_check(cudaEventRecord(e, stream), "cudaEventRecord");
  return e;
}

// `waiter` waits (on the GPU) for what `stream` has queued so far.
void stream_wait(cudaStream_t waiter, cudaStream_t stream) {
  cudaEvent_t e = record_event(stream);
  cuda_check(cudaStreamWaitEvent(waiter, e, 0), "cudaStreamWaitEvent");
  cuda_check(cudaEventDestroy(e), "cudaEventDestroy");
}

// Frees the device blocks whose offload copy has finished (all with `wait`).
void release_pending(bool wait) {
  CudaState& st = cuda_state();
  while (!st.pending.empty()) {
    PendingFree& p = st.pending.front();
    if (wait) {
      cuda_check(cudaEventSynchronize(p.copied), "cudaEventSynchronize");
    } else if (cudaEventQuery(p.copied) != cudaSuccess) {
      break;  // copies finish in order on the one side stream
    }
    cuda_check(cudaEventDestroy(p.copied), "cudaEventDestroy");
    st.pending.pop_front();  // drops the DataPtr: the block goes back to the allocator
  }
}

int64_t cuda_move_storage(c10::StorageImpl* s, bool to_host) {
  CudaState& st = cuda_state();
  const c10::DataPtr& dp = s->data_ptr();
  size_t n = s->nbytes();
  if (dp.device().is_cpu() == to_host) return 0;
  TORCH_CHECK(to_host ? dp.device().is_cuda() : dp.device().is_cpu(),
              "remat: a storage on ", dp.device(), " cannot be moved");
  cudaStream_t compute = c10::cuda::getCurrentCUDAStream(st.device).stream();
  c10::cuda::CUDAStream side = *st.side;
  at::HostAllocator* host = at::getHostAllocator(at::kCUDA);
  stream_wait(side.stream(), compute);
  if (to_host) {
    c10::DataPtr fresh = host->allocate(n);
    cuda_check(cudaMemcpyAsync(fresh.get(), dp.get(), n, cudaMemcpyDeviceToHost, side.stream()),
               "offload copy");
    // The pinned block is written on the side stream: not reused before.
    host->record_event(fresh.get(), fresh.get_context(), side.unwrap());
    cudaEvent_t copied = record_event(side.stream());
    c10::DataPtr old = replace_bytes(s, std::move(fresh));
    st.pending.push_back(PendingFree{std::move(old), copied});
  } else {
    c10::DataPtr fresh = c10::cuda::CUDACachingAllocator::get()->allocate(n);
    cuda_check(cudaMemcpyAsync(fresh.get(), dp.get(), n, cudaMemcpyHostToDevice, side.stream()),
               "prefetch copy");
    c10::cuda::CUDACachingAllocator::recordStream(fresh, side);
    // The pinned source is read on the side stream: freed below, not reused before.
    host->record_event(dp.get(), dp.get_context(), side.unwrap());
    // Compute reads the block only after the copy.
    stream_wait(compute, side.stream());
    c10::DataPtr old = replace_bytes(s, std::move(fresh));
  }
  return static_cast<int64_t>(n);
}

}  // namespace remat_shim

extern "C" {

int remat_cuda_init() {
  return guarded<int>(2, [&]() -> int {
    if (c10::cuda::device_count() <= 0) {
      g_error =
          "no CUDA device is visible (c10::cuda::device_count() is 0: no GPU, no driver, "
          "or CUDA_VISIBLE_DEVICES hides it)";
      return 1;
    }
    CudaState& st = cuda_state();
    static bool done = false;
    if (!done) {
      st.device = 0;
      c10::cuda::set_device(st.device);
      // A first CUDA tensor initialises CUDA and the caching allocator's
      // per-device state: attaching the tracker or reading statistics
      // before that would reach no device allocator.
      at::empty({1}, at::TensorOptions().device(c10::Device(c10::DeviceType::CUDA, st.device)));
      c10::cuda::CUDACachingAllocator::attachAllocatorTraceTracker(&on_trace);
      st.side = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, st.device);
      done = true;
    }
    g_cuda = true;
    cuda_reset_peak();
    return 0;
  });
}

int remat_cuda_synchronize() {
  return guarded<int>(1, [&]() -> int {
    c10::cuda::device_synchronize();
    release_pending(/*wait=*/true);
    return 0;
  });
}

int remat_cuda_op_boundary() {
  return guarded<int>(1, [&]() -> int {
    release_pending(/*wait=*/false);
    return 0;
  });
}

int64_t remat_cuda_reserved_peak_bytes() { return cuda_reserved_peak(); }

void* remat_cuda_mark() {
  return guarded<void*>(nullptr, [&]() -> void* {
    cudaEvent_t e;
    cuda_check(cudaEventCreate(&e), "cudaEventCreate");
    cuda_check(cudaEventRecord(e, c10::cuda::getCurrentCUDAStream(cuda_state().device).stream()),
               "cudaEventRecord");
    return static_cast<void*>(e);
  });
}

double remat_cuda_elapsed(void* a, void* b) {
  return guarded<double>(-1.0, [&]() -> double {
    cuda_check(cudaEventSynchronize(static_cast<cudaEvent_t>(b)), "cudaEventSynchronize");
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(a), static_cast<cudaEvent_t>(b)),
               "cudaEventElapsedTime");
    return ms / 1000.0;
  });
}

void remat_cuda_event_free(void* e) {
  if (e != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(e));
}

double remat_cuda_bandwidth(int64_t bytes, int reps) {
  return guarded<double>(-1.0, [&]() -> double {
    CudaState& st = cuda_state();
    at::Tensor dev = at::empty({bytes}, at::TensorOptions().dtype(at::kByte).device(
                                            c10::Device(c10::DeviceType::CUDA, st.device)));
    at::Tensor host = at::empty({bytes}, at::TensorOptions().dtype(at::kByte).pinned_memory(true));
    cudaStream_t side = st.side->stream();
    stream_wait(side, c10::cuda::getCurrentCUDAStream(st.device).stream());
    std::vector<double> rates;
    for (int r = 0; r <= reps; ++r) {
      cudaEvent_t start, stop;
      cuda_check(cudaEventCreate(&start), "cudaEventCreate");
      cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
      cuda_check(cudaEventRecord(start, side), "cudaEventRecord");
      cuda_check(cudaMemcpyAsync(host.data_ptr(), dev.data_ptr(), bytes, cudaMemcpyDeviceToHost, side),
                 "bandwidth copy");
      cuda_check(cudaMemcpyAsync(dev.data_ptr(), host.data_ptr(), bytes, cudaMemcpyHostToDevice, side),
                 "bandwidth copy");
      cuda_check(cudaEventRecord(stop, side), "cudaEventRecord");
      cuda_check(cudaEventSynchronize(stop), "cudaEventSynchronize");
      float ms = 0;
      cuda_check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
      cudaEventDestroy(start);
      cudaEventDestroy(stop);
      if (r > 0) rates.push_back(2.0 * static_cast<double>(bytes) / (ms / 1000.0));
    }
    std::sort(rates.begin(), rates.end());
    return rates.empty() ? -1.0 : rates[rates.size() / 2];
  });
}

}  // extern "C"
#endif  // REMAT_CUDA

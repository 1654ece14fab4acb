// The counting CPU allocator and the memory interface: exact current and
// peak bytes of every tensor libtorch allocates on the CPU, split into
// "device" (the activations a budget counts) and "host" (offloaded copies,
// which a budget does not); parameter gradients can be booked outside the
// device count (they are outside the chain, like the weights), while the
// raw total keeps them. With REMAT_CUDA, after remat_cuda_init, the same
// interface reads the CUDA caching allocator (cuda.cpp).
#include <c10/core/CPUAllocator.h>
#include <torch/torch.h>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "internal.h"
#include "remat_shim.h"

using namespace remat_shim;

namespace remat_shim {

// Declared, and said what they are, in internal.h.
std::atomic<int64_t> g_serial{0};
thread_local std::string g_error;
bool g_cuda = false;

}  // namespace remat_shim

namespace {

// g_current / g_peak: device bytes minus the bytes booked outside the chain
// (parameter gradients); g_total / g_total_peak: every device byte.
std::atomic<int64_t> g_current{0}, g_peak{0}, g_total{0}, g_total_peak{0};
std::atomic<bool> g_host_mode{false};

void raise_peak(std::atomic<int64_t>& peak, int64_t now) {
  int64_t p = peak.load();
  while (now > p && !peak.compare_exchange_weak(p, now)) {
  }
}

void count(int64_t delta) {
  raise_peak(g_peak, g_current.fetch_add(delta) + delta);
  raise_peak(g_total_peak, g_total.fetch_add(delta) + delta);
}

}  // namespace

namespace remat_shim {

void counted_delete(void* data) {
  if (data == nullptr) return;
  char* base = static_cast<char*>(data) - kHeader;
  Header h;
  std::memcpy(&h, base, sizeof h);
  // Host bytes (offloaded copies) are outside every count.
  if (!h.host) count(-h.bytes);
  std::free(base);
}

c10::DataPtr allocate_counted(size_t n, bool host) {
  if (n == 0) {
    return {nullptr, nullptr, &counted_delete, c10::Device(c10::DeviceType::CPU)};
  }
  void* base = nullptr;
  if (posix_memalign(&base, kHeader, n + kHeader) != 0 || base == nullptr) {
    TORCH_CHECK(false, "remat counting allocator: out of memory allocating ", n, " bytes");
  }
  Header h{static_cast<int64_t>(n), host ? 1 : 0, g_serial.fetch_add(1)};
  std::memcpy(base, &h, sizeof h);
  if (!host) count(static_cast<int64_t>(n));
  void* data = static_cast<char*>(base) + kHeader;
  // data == context, as c10's raw_allocate requires.
  return {data, data, &counted_delete, c10::Device(c10::DeviceType::CPU)};
}

}  // namespace remat_shim

namespace {

struct CountingAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) override { return allocate_counted(n, g_host_mode.load()); }
  c10::DeleterFnPtr raw_deleter() const override { return &counted_delete; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
};

CountingAllocator g_allocator;

}  // namespace

#ifdef REMAT_CUDA
#define REMAT_ON_CUDA(call) \
  if (g_cuda) return call
#else
#define REMAT_ON_CUDA(call)
#endif

extern "C" {

void remat_install_allocator() {
  static bool done = false;
  if (done) return;
  done = true;
  c10::SetCPUAllocator(&g_allocator, /*priority=*/100);
  at::globalContext().setUserEnabledMkldnn(true);
  at::globalContext().setUserEnabledNNPACK(false);
}

// On a GPU (after remat_cuda_init) these read the CUDA caching allocator,
// else the counting CPU allocator's counter.
#define REMAT_COUNTER(name, on_cuda, counter) \
  int64_t name() {                            \
    REMAT_ON_CUDA(on_cuda());                 \
    return counter.load();                    \
  }
REMAT_COUNTER(remat_current_bytes, cuda_current, g_current)
REMAT_COUNTER(remat_peak_bytes, cuda_peak, g_peak)
REMAT_COUNTER(remat_total_bytes, cuda_total, g_total)
REMAT_COUNTER(remat_total_peak_bytes, cuda_total_peak, g_total_peak)
#undef REMAT_COUNTER
void remat_reset_peak() {
  REMAT_ON_CUDA(cuda_reset_peak());
  g_peak.store(g_current.load());
  g_total_peak.store(g_total.load());
}
void remat_book_outside(int64_t bytes) {
  REMAT_ON_CUDA(cuda_book_outside(bytes));
  raise_peak(g_peak, g_current.fetch_sub(bytes) - bytes);
}
void remat_set_host_mode(int on) { g_host_mode.store(on != 0); }

const char* remat_last_error() { return g_error.c_str(); }

}  // extern "C"

// The few libtorch calls tch does not expose (see build.rs):
//  - a counting CPU allocator: exact current / peak bytes of every tensor
//    libtorch allocates on the CPU, split into "device" (the activations a
//    budget counts) and "host" (offloaded copies, which a budget does not);
//    parameter gradients can be booked outside the device count (they are
//    outside the chain, like the weights), while the raw total keeps them;
//  - backward from a given output gradient (torch::autograd::backward);
//  - taking a leaf's .grad out of it, so that δ is freed when we drop it;
//  - the backend switches: oneDNN on (PyTorch's CPU default; ideep allocates
//    its tensors and scratchpads through c10's CPU allocator, so they are
//    counted — docs/profiler.md has the evidence), NNPACK off (its workspace
//    is a static buffer allocated outside c10).
#include <torch/torch.h>
#include <c10/core/CPUAllocator.h>
#include <torch/csrc/autograd/engine.h>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr size_t kHeader = 64;  // keeps c10's 64-byte alignment for the data

// g_current / g_peak: device bytes minus the bytes booked outside the chain
// (parameter gradients); g_total / g_total_peak: every device byte.
std::atomic<int64_t> g_current{0}, g_peak{0}, g_host{0}, g_total{0}, g_total_peak{0};
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

// The header stores the size and whether it was a host allocation, so the
// deleter (which gets only the data pointer) can undo exactly what was counted.
struct Header {
  int64_t bytes;
  int64_t host;
};

void counted_delete(void* data) {
  if (data == nullptr) return;
  char* base = static_cast<char*>(data) - kHeader;
  Header h;
  std::memcpy(&h, base, sizeof h);
  if (h.host) {
    g_host.fetch_sub(h.bytes);
  } else {
    count(-h.bytes);
  }
  std::free(base);
}

struct CountingAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) override {
    if (n == 0) {
      return {nullptr, nullptr, &counted_delete, c10::Device(c10::DeviceType::CPU)};
    }
    void* base = nullptr;
    if (posix_memalign(&base, kHeader, n + kHeader) != 0 || base == nullptr) {
      TORCH_CHECK(false, "remat counting allocator: out of memory allocating ", n, " bytes");
    }
    bool host = g_host_mode.load();
    Header h{static_cast<int64_t>(n), host ? 1 : 0};
    std::memcpy(base, &h, sizeof h);
    if (host) {
      g_host.fetch_add(static_cast<int64_t>(n));
    } else {
      count(static_cast<int64_t>(n));
    }
    void* data = static_cast<char*>(base) + kHeader;
    // data == context, as c10's raw_allocate requires.
    return {data, data, &counted_delete, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &counted_delete; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
};

CountingAllocator g_allocator;
thread_local std::string g_error;

}  // namespace

extern "C" {

// Installs the counting allocator (idempotent) and sets the backends: oneDNN
// on, as PyTorch runs on the CPU by default (its memory goes through c10's
// CPU allocator: ideep registers c10::GetAllocator(CPU) as its engine's
// allocator and runs every primitive with a user scratchpad); NNPACK off
// (its workspace is a static buffer allocated outside c10).
void remat_install_allocator() {
  static bool done = false;
  if (done) return;
  done = true;
  c10::SetCPUAllocator(&g_allocator, /*priority=*/100);
  at::globalContext().setUserEnabledMkldnn(true);
  at::globalContext().setUserEnabledNNPACK(false);
}

int64_t remat_current_bytes() { return g_current.load(); }
int64_t remat_peak_bytes() { return g_peak.load(); }
int64_t remat_total_bytes() { return g_total.load(); }
int64_t remat_total_peak_bytes() { return g_total_peak.load(); }
int64_t remat_host_bytes() { return g_host.load(); }
void remat_reset_peak() {
  g_peak.store(g_current.load());
  g_total_peak.store(g_total.load());
}
// Books `bytes` outside the device count (> 0) or back into it (< 0): the
// raw total is unchanged, the device count and its peak follow.
void remat_book_outside(int64_t bytes) { raise_peak(g_peak, g_current.fetch_sub(bytes) - bytes); }
void remat_set_host_mode(int on) { g_host_mode.store(on != 0); }

const char* remat_last_error() { return g_error.c_str(); }

// Runs the backward of `out`'s graph seeded with `grad` (δ^ℓ), freeing the
// graph (and what it saved) as autograd does. `out` is emptied first, so only
// the graph keeps a^ℓ alive, and only if a backward formula needs it.
// Returns 0, or 1 with remat_last_error() set.
int remat_backward(torch::Tensor* out, torch::Tensor* grad) {
  try {
    torch::autograd::Edge edge = torch::autograd::impl::gradient_edge(*out);
    *out = torch::Tensor();
    torch::autograd::variable_list grads{*grad};
    *grad = torch::Tensor();
    torch::autograd::Engine::get_default_engine().execute(
        {edge}, grads, /*keep_graph=*/false, /*create_graph=*/false,
        /*accumulate_grad=*/true, /*outputs=*/{});
    return 0;
  } catch (const std::exception& e) {
    g_error = e.what();
    return 1;
  }
}

// Bytes the allocator gave the tensor's storage (0 if undefined).
int64_t remat_storage_bytes(torch::Tensor* t) {
  return t->defined() ? static_cast<int64_t>(t->storage().nbytes()) : 0;
}

// The leaf's .grad, moved out of it (an undefined tensor if it has none).
torch::Tensor* remat_take_grad(torch::Tensor* leaf) {
  torch::Tensor g = leaf->grad();
  leaf->mutable_grad() = torch::Tensor();
  return new torch::Tensor(std::move(g));
}

}  // extern "C"

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
#include <torch/csrc/autograd/saved_variable_hooks.h>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr size_t kHeader = 64;  // keeps c10's 64-byte alignment for the data

// g_current / g_peak: device bytes minus the bytes booked outside the chain
// (parameter gradients); g_total / g_total_peak: every device byte.
std::atomic<int64_t> g_current{0}, g_peak{0}, g_host{0}, g_total{0}, g_total_peak{0};
// Allocation serial numbers: a storage allocated after a recording forward
// began has a serial at least the one read then (see SavedStorages).
std::atomic<int64_t> g_serial{0};
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
  int64_t serial;
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

// `n` bytes booked as host (offloaded copies) or device memory.
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
  if (host) {
    g_host.fetch_add(static_cast<int64_t>(n));
  } else {
    count(static_cast<int64_t>(n));
  }
  void* data = static_cast<char*>(base) + kHeader;
  // data == context, as c10's raw_allocate requires.
  return {data, data, &counted_delete, c10::Device(c10::DeviceType::CPU)};
}

struct CountingAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) override { return allocate_counted(n, g_host_mode.load()); }
  c10::DeleterFnPtr raw_deleter() const override { return &counted_delete; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
};

CountingAllocator g_allocator;
thread_local std::string g_error;

// ---------------------------------------------------------------------------
// Offloading ā^ℓ: the tensors autograd saved for B^ℓ, moved to host memory.
//
// Why saved-tensor hooks: ā^ℓ is not one tensor but what the stage's graph
// keeps alive (the conv's input copy, batch-norm statistics, pooling indices,
// dropout masks, in-place ReLU outputs, ...), held inside autograd Nodes that
// libtorch's C++ API does not enumerate. A SavedVariable asks the engine for
// default hooks (Engine::get_default_saved_variable_hooks(), which is how
// Python's torch.autograd.graph.saved_tensors_hooks is wired); installing an
// engine that answers with our hooks while a stage records lets us see every
// tensor saved for B^ℓ as it is saved.
//
// Why move storages in place instead of packing copies: the hooks only
// *register* the saved tensor's storage with the stage being recorded; the
// offload later moves each registered storage's bytes into memory the
// counting allocator books as host and swaps the StorageImpl's DataPtr, so
// the device bytes are really freed (the allocator's current drops by
// exactly what moved) while every alias — the saved tensors inside the
// graph, the output, the next stage's input — keeps pointing at the same
// StorageImpl. Prefetch swaps a fresh device-booked copy back. Packing a
// copy in the pack hook instead would move the data at save time, not at
// the schedule's offload, and would not free tensors that something else
// (the output handle) still references.
//
// Which storages are ā^ℓ: those allocated while stage ℓ's recording forward
// ran (allocation serial ≥ the serial when it began), which is exactly what
// the profiler measures as ω_ā^ℓ (allocated after a recording forward, the
// input held apart). This excludes parameters, batch-norm buffers, targets
// and the stage's input a^{ℓ-1}, which the graph saves too but which are
// not part of ā^ℓ. Storages are held weakly, so B^ℓ still frees them as
// autograd goes; a storage is deduplicated by its StorageImpl.
//
// On the CPU "host" and "device" are the same RAM: a moved storage stays
// readable, only its booking changes. That is what the budget measures;
// the simulator has already refused schedules that read offloaded tensors.

struct SavedStorages {
  // Storages allocated before this serial are not ā (see above).
  int64_t since = 0;
  std::vector<c10::weak_intrusive_ptr<c10::StorageImpl>> storages;
  std::vector<c10::StorageImpl*> seen;  // raw keys for dedup; kept alive by the weak refs

  void add(const at::Tensor& t) {
    if (!t.defined() || !t.has_storage()) return;
    c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
    const c10::DataPtr& dp = s->data_ptr();
    // Only the counting allocator's blocks carry a serial.
    if (dp.get() == nullptr || dp.get_deleter() != &counted_delete) return;
    Header h;
    std::memcpy(&h, static_cast<const char*>(dp.get()) - kHeader, sizeof h);
    if (h.serial < since) return;
    for (c10::StorageImpl* k : seen) {
      if (k == s) return;
    }
    seen.push_back(s);
    storages.push_back(t.storage().getWeakStorageImpl());
  }
};

// The stage being recorded (one at a time: stages run in list order).
SavedStorages* g_recording = nullptr;

// Registers the saved tensor's storage with the recording stage and keeps a
// detached alias for unpacking. Detached, because a saved *output* still has
// the Node that owns this SavedVariable as grad_fn: holding it would be a
// reference cycle that never frees ā. SavedVariable::unpack re-attaches the
// grad_fn itself.
struct RegisteringHooks final : torch::autograd::SavedVariableHooks {
  at::Tensor data;
  void call_pack_hook(const at::Tensor& tensor) override {
    data = tensor.detach();
    if (g_recording != nullptr) g_recording->add(tensor);
  }
  at::Tensor call_unpack_hook() override { return data; }
};

struct RematEngine final : torch::autograd::Engine {
  std::unique_ptr<torch::autograd::SavedVariableHooks> get_default_saved_variable_hooks()
      override {
    // Outside a recording forward, autograd saves as it always does.
    if (g_recording == nullptr) return nullptr;
    return std::make_unique<RegisteringHooks>();
  }
};

torch::autograd::Engine& remat_engine() {
  // Leaked on purpose: the engine's destructor joins worker threads, which
  // must not run during static destruction at exit.
  static RematEngine* engine = new RematEngine();
  return *engine;
}

bool is_host(const c10::DataPtr& dp) {
  Header h;
  std::memcpy(&h, static_cast<const char*>(dp.get()) - kHeader, sizeof h);
  return h.host != 0;
}

// Moves one storage's bytes into a block booked as host (to_host) or device,
// swapping its DataPtr, and frees the old block. Returns the bytes moved (0
// when it already was there).
int64_t move_storage(c10::StorageImpl* s, bool to_host) {
  const c10::DataPtr& dp = s->data_ptr();
  size_t n = s->nbytes();
  if (n == 0 || dp.get() == nullptr) return 0;
  TORCH_CHECK(dp.device().is_cpu(), "remat: moving a non-CPU storage is not supported");
  TORCH_CHECK(dp.get_deleter() == &counted_delete,
              "remat: a storage not allocated by the counting allocator cannot be moved");
  if (is_host(dp) == to_host) return 0;
  c10::DataPtr fresh = allocate_counted(n, to_host);
  std::memcpy(fresh.get(), dp.get(), n);
  c10::DataPtr old = s->set_data_ptr(std::move(fresh));
  // `old` is freed here: the bytes leave the side they were booked on.
  return static_cast<int64_t>(n);
}


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

// --- Saved storages (offloading ā^ℓ and a^ℓ) -------------------------------

// Makes autograd ask us for saved-tensor hooks (idempotent).
void remat_install_saved_hooks() {
  static bool done = false;
  if (done) return;
  done = true;
  torch::autograd::set_default_engine_stub(&remat_engine);
}

void* remat_storages_new() { return new SavedStorages(); }
void remat_storages_free(void* set) { delete static_cast<SavedStorages*>(set); }

// From now until remat_storages_record_end(), every tensor autograd saves and
// that was allocated from now on is registered with `set`.
void remat_storages_record_begin(void* set) {
  auto* s = static_cast<SavedStorages*>(set);
  s->since = g_serial.load();
  g_recording = s;
}
void remat_storages_record_end() { g_recording = nullptr; }

// Registers `t`'s storage (when allocated since the recording began; any
// storage of the counting allocator for a set that never recorded).
void remat_storages_add(void* set, torch::Tensor* t) { static_cast<SavedStorages*>(set)->add(*t); }

// Moves every live storage of the set to host (to_host = 1) or device
// memory. Returns the bytes moved, or -1 with remat_last_error() set.
int64_t remat_storages_move(void* set, int to_host) {
  try {
    int64_t moved = 0;
    for (auto& w : static_cast<SavedStorages*>(set)->storages) {
      auto s = w.lock();
      if (s) moved += move_storage(s.get(), to_host != 0);
    }
    return moved;
  } catch (const std::exception& e) {
    g_error = e.what();
    return -1;
  }
}

}  // extern "C"

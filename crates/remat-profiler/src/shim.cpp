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
//  - releasing a^ℓ's storage under every alias and putting recomputed
//    values back under it (R of dtr / delta; "Releasing a^ℓ at the storage
//    level" below).
//  - with REMAT_CUDA (cargo feature `cuda`, build.rs): the same memory
//    interface read from the CUDA caching allocator's device statistics,
//    CUDA events for op times, and offload / prefetch between device memory
//    and pinned host memory on a side stream (the section at the end).
//    Compile-checked only: never run on a GPU (docs/profiler.md).
#include <torch/torch.h>
#include <c10/core/CPUAllocator.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/saved_variable_hooks.h>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>
#ifdef REMAT_CUDA
#include <ATen/core/CachingHostAllocator.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <algorithm>
#include <deque>
#include <mutex>
#endif

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

// Set by remat_cuda_init: the memory interface below reads the CUDA caching
// allocator instead of the counting CPU allocator.
bool g_cuda = false;

#ifdef REMAT_CUDA
int64_t cuda_serial_of(const void* ptr);
int64_t cuda_move_storage(c10::StorageImpl* s, bool to_host);
int64_t cuda_current();
int64_t cuda_peak();
int64_t cuda_total();
int64_t cuda_total_peak();
void cuda_reset_peak();
void cuda_book_outside(int64_t bytes);
#define REMAT_ON_CUDA(call) \
  if (g_cuda) return call
#else
#define REMAT_ON_CUDA(call)
#endif

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
    if (dp.get() == nullptr) return;
#ifdef REMAT_CUDA
    if (dp.device().is_cuda()) {
      // The allocator trace gives every live CUDA block its serial.
      if (cuda_serial_of(dp.get()) < since) return;
    } else
#endif
    {
      // Only the counting allocator's blocks carry a serial.
      if (dp.get_deleter() != &counted_delete) return;
      Header h;
      std::memcpy(&h, static_cast<const char*>(dp.get()) - kHeader, sizeof h);
      if (h.serial < since) return;
    }
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

// ---------------------------------------------------------------------------
// Releasing a^ℓ at the storage level (R(a^ℓ), R(ā^ℓ) of dtr and delta).
//
// Why: the graph of stage ℓ+1 saves its input, an alias of a^ℓ's storage
// (the conv's input, and the leaf itself inside AccumulateGrad). Dropping
// the runner's handles frees nothing while that graph lives, yet the model
// (docs/model.md) frees a^ℓ's device copy at R — as DTR does, which evicts
// storages, not references. So a release frees the storage's bytes under
// every alias (`discard`), the StorageImpl and its aliases staying; a later
// forward that recomputes a^ℓ puts the bytes back under them (`restore`),
// so B^{ℓ+1} reads the recomputed values from the one copy the model counts.
//
// Restoring, two ways, neither of which copies or touches a version counter:
//  - move: the recomputed tensor's block becomes the released storage's
//    (a no-grad F_ck / F_∅ output that nothing else holds); the runner keeps
//    the released handle and drops the recomputed one;
//  - borrow: the released storage points at the recomputed storage's bytes
//    and holds a reference to that storage (its DataPtr's context), where the
//    recomputed storage must stay (an F_all output: graph ℓ may have saved
//    it). The owner may move later (offload, prefetch, another release):
//    every change of an owner's DataPtr repoints its borrowers (`repoint`),
//    recursively, since an owner can itself borrow after its own restore.
// A borrower keeps its owner alive through the context even while both are
// empty, so "someone still reads this storage" is its use count above one.

struct Borrow {
  c10::intrusive_ptr<c10::StorageImpl> owner;
};

void borrow_delete(void* ctx) { delete static_cast<Borrow*>(ctx); }

// Owner -> the storages that borrow its bytes (weak: graph ℓ+1 owns them).
std::unordered_map<c10::StorageImpl*, std::vector<c10::weak_intrusive_ptr<c10::StorageImpl>>>
    g_borrowers;

c10::intrusive_ptr<c10::StorageImpl> strong(c10::StorageImpl* s) {
  return c10::intrusive_ptr<c10::StorageImpl>::reclaim_copy(s);
}

// A DataPtr reading `owner`'s current bytes (null when it is released) and
// keeping `owner` alive.
c10::DataPtr borrowed_from(c10::StorageImpl* owner) {
  const c10::DataPtr& dp = owner->data_ptr();
  return {dp.get(), new Borrow{strong(owner)}, &borrow_delete, dp.device()};
}

// Drops the entries of owners none of whose borrowers lives any more (an
// owner outlives its borrowers, so these are owners gone with their step):
// the table stays as small as the borrowing in flight.
void forget_dead_owners() {
  for (auto it = g_borrowers.begin(); it != g_borrowers.end();) {
    bool any = false;
    for (auto& w : it->second) any = any || !w.expired();
    it = any ? std::next(it) : g_borrowers.erase(it);
  }
}

// After `owner`'s DataPtr changed: every live borrower reads the new bytes.
void repoint(c10::StorageImpl* owner) {
  auto it = g_borrowers.find(owner);
  if (it == g_borrowers.end()) return;
  std::vector<c10::intrusive_ptr<c10::StorageImpl>> live;
  for (auto& w : it->second) {
    if (auto b = w.lock()) live.push_back(std::move(b));
  }
  if (live.empty()) {
    g_borrowers.erase(it);
    return;
  }
  it->second.clear();
  for (auto& b : live) it->second.emplace_back(b);
  for (auto& b : live) {
    b->set_data_ptr_noswap(borrowed_from(owner));
    repoint(b.get());
  }
}

// Gives storage `s` new bytes (`fresh`, possibly none) and points the
// storages borrowing from it at them; returns the old block, which the
// caller frees now or later (a pending copy).
c10::DataPtr replace_bytes(c10::StorageImpl* s, c10::DataPtr fresh) {
  c10::DataPtr old = s->set_data_ptr(std::move(fresh));
  repoint(s);
  return old;
}

bool is_borrower(const c10::StorageImpl* s) {
  return s->data_ptr().get_deleter() == &borrow_delete;
}

// Frees the bytes of `t`'s storage under every alias; returns the bytes freed.
int64_t discard_storage(const at::Tensor& t) {
  TORCH_CHECK(t.defined() && t.has_storage(), "remat: releasing a tensor without storage");
  c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
  if (s->data_ptr().get() == nullptr) return 0;
  TORCH_CHECK(!is_borrower(s), "remat: the runner never releases a borrowing storage");
  c10::Device device = s->data_ptr().device();
  c10::DataPtr old = replace_bytes(s, c10::DataPtr(nullptr, device));
  // `old` is freed here (on a GPU the block goes back to the caching
  // allocator, stream-ordered like any tensor's).
  return static_cast<int64_t>(s->nbytes());
}

// Puts recomputed values back under a released storage. 0: nothing but
// `old` reads it (drop `old`); 1: moved `fresh`'s block into it (keep `old`,
// drop `fresh`); 2: it borrows `fresh`'s bytes (keep `fresh`).
int restore_storage(const at::Tensor& old, const at::Tensor& fresh, bool allow_move) {
  c10::StorageImpl* s = old.storage().unsafeGetStorageImpl();
  TORCH_CHECK(s->data_ptr().get() == nullptr, "remat: restoring a storage that was not released");
  if (old.storage().use_count() == 1) return 0;
  TORCH_CHECK(fresh.sizes() == old.sizes() && fresh.strides() == old.strides() &&
                  fresh.storage_offset() == old.storage_offset() &&
                  fresh.dtype() == old.dtype() && fresh.storage().nbytes() == s->nbytes(),
              "remat: the recomputed tensor (sizes ", fresh.sizes(), ", strides ", fresh.strides(),
              ", ", fresh.storage().nbytes(), " bytes) is not laid out as the released one (sizes ",
              old.sizes(), ", strides ", old.strides(), ", ", s->nbytes(), " bytes)");
  c10::StorageImpl* f = fresh.storage().unsafeGetStorageImpl();
  TORCH_CHECK(f->data_ptr().get() != nullptr, "remat: restoring from a released storage");
  if (allow_move && fresh.storage().use_count() == 1 && !is_borrower(f)) {
    s->set_data_ptr_noswap(f->set_data_ptr(c10::DataPtr(nullptr, f->data_ptr().device())));
    repoint(s);
    return 1;
  }
  s->set_data_ptr_noswap(borrowed_from(f));
  forget_dead_owners();
  g_borrowers[f].emplace_back(strong(s));
  repoint(s);
  return 2;
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
  TORCH_CHECK(!is_borrower(s), "remat: a storage borrowing another's bytes cannot be moved");
#ifdef REMAT_CUDA
  if (g_cuda) return cuda_move_storage(s, to_host);
#endif
  TORCH_CHECK(dp.device().is_cpu(), "remat: moving a non-CPU storage is not supported");
  TORCH_CHECK(dp.get_deleter() == &counted_delete,
              "remat: a storage not allocated by the counting allocator cannot be moved");
  if (is_host(dp) == to_host) return 0;
  c10::DataPtr fresh = allocate_counted(n, to_host);
  std::memcpy(fresh.get(), dp.get(), n);
  c10::DataPtr old = replace_bytes(s, std::move(fresh));
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
int64_t remat_host_bytes() { return g_host.load(); }
void remat_reset_peak() {
  REMAT_ON_CUDA(cuda_reset_peak());
  g_peak.store(g_current.load());
  g_total_peak.store(g_total.load());
}
// Books `bytes` outside the device count (> 0) or back into it (< 0): the
// raw total is unchanged, the device count and its peak follow.
void remat_book_outside(int64_t bytes) {
  REMAT_ON_CUDA(cuda_book_outside(bytes));
  raise_peak(g_peak, g_current.fetch_sub(bytes) - bytes);
}
void remat_set_host_mode(int on) { g_host_mode.store(on != 0); }

const char* remat_last_error() { return g_error.c_str(); }

}  // extern "C"

namespace {

// The root of B^ℓ's graph: hands δ^ℓ to the output's grad_fn and lets go
// of it. Engine::execute takes its root gradients by const reference, so a
// δ^ℓ passed there stays alive until the whole backward returns; in a plain
// PyTorch step δ^ℓ is freed as soon as the first node of the stage's
// backward has read it (the H100 reference chains, measured with PyTorch,
// show it: VGG-19's conv1_2 backward peaked 392 MiB — its δ — below this
// profiler's when it held δ). Handed over here, the engine holds the only
// reference, as in a plain step and in remat_torch (`backward_handing_over`).
struct HandOver final : torch::autograd::Node {
  at::Tensor delta;
  HandOver(at::Tensor d, torch::autograd::Edge next)
      : torch::autograd::Node(torch::autograd::edge_list{std::move(next)}), delta(std::move(d)) {}
  torch::autograd::variable_list apply(torch::autograd::variable_list&& /*seed*/) override {
    return {std::move(delta)};
  }
  std::string name() const override { return "remat::HandOver"; }
};

// A new autograd node, owned as the libtorch version owns them
// (std::shared_ptr up to 2.12, c10::intrusive_ptr from 2.13).
template <typename T, typename... Args>
decltype(torch::autograd::Edge::function) make_node(Args&&... args) {
  using Ptr = decltype(torch::autograd::Edge::function);
  if constexpr (std::is_same_v<Ptr, std::shared_ptr<torch::autograd::Node>>) {
    return std::make_shared<T>(std::forward<Args>(args)...);
  } else {
    return c10::make_intrusive<T>(std::forward<Args>(args)...);
  }
}

}  // namespace

extern "C" {

// Runs the backward of `out`'s graph seeded with `grad` (δ^ℓ), freeing the
// graph (and what it saved) as autograd does. `out` is emptied first, so only
// the graph keeps a^ℓ alive, and only if a backward formula needs it; δ^ℓ
// goes through a HandOver root, so only the engine keeps it, until its last
// reader has run. Returns 0, or 1 with remat_last_error() set.
int remat_backward(torch::Tensor* out, torch::Tensor* grad) {
  return guarded<int>(1, [&]() -> int {
    if (!out->requires_grad()) {
      // No graph to run (a detached or integer output): the engine would
      // dereference a null function. The caller decides whether that is an
      // error (Net::backward_stage).
      throw std::runtime_error("the stage's output does not require grad (it has no graph)");
    }
    torch::autograd::Edge edge = torch::autograd::impl::gradient_edge(*out);
    *out = torch::Tensor();
    // A 0-d seed on δ's device (it picks the engine's ready queue) of 1 element.
    at::Tensor seed = at::ones({}, grad->options());
    auto root = make_node<HandOver>(std::move(*grad), std::move(edge));
    *grad = torch::Tensor();
    root->add_input_metadata(seed);
    torch::autograd::variable_list seeds{std::move(seed)};
    torch::autograd::Engine::get_default_engine().execute(
        {torch::autograd::Edge(root, 0)}, seeds, /*keep_graph=*/false, /*create_graph=*/false,
        /*accumulate_grad=*/true, /*outputs=*/{});
    return 0;
  });
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
  return guarded<int64_t>(-1, [&]() -> int64_t {
    int64_t moved = 0;
    for (auto& w : static_cast<SavedStorages*>(set)->storages) {
      auto s = w.lock();
      if (s) moved += move_storage(s.get(), to_host != 0);
    }
    return moved;
  });
}

// R(a^ℓ) / R(ā^ℓ): frees the bytes of `t`'s storage under every alias (see
// "Releasing a^ℓ at the storage level"). Returns the bytes freed, or -1
// with remat_last_error() set.
int64_t remat_storage_discard(torch::Tensor* t) {
  return guarded<int64_t>(-1, [&]() -> int64_t { return discard_storage(*t); });
}

// Puts `fresh`'s values back under `old`'s released storage: 0 nothing else
// reads it, 1 moved (keep `old`), 2 borrowed (keep `fresh`); -1 with
// remat_last_error() set.
int remat_storage_restore(torch::Tensor* old, torch::Tensor* fresh, int allow_move) {
  return guarded<int>(-1, [&]() -> int { return restore_storage(*old, *fresh, allow_move != 0); });
}

// Whether both tensors are defined and share one storage.
int remat_same_storage(torch::Tensor* a, torch::Tensor* b) {
  return a->defined() && b->defined() && a->has_storage() && b->has_storage() &&
         a->storage().unsafeGetStorageImpl() == b->storage().unsafeGetStorageImpl();
}

}  // extern "C"

// ===========================================================================
// CUDA (cargo feature `cuda`; build.rs defines REMAT_CUDA and links
// libtorch_cuda / libc10_cuda). Compile-checked only: never run on a GPU.
//
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
#ifdef REMAT_CUDA
namespace {

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

}  // namespace

extern "C" {

// Selects the GPU (device 0) for the memory interface above. Returns 0, 1
// when no CUDA device is visible, 2 on another error; remat_last_error()
// says which.
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

// Waits for the GPU and frees every device block an offload left.
int remat_cuda_synchronize() {
  return guarded<int>(1, [&]() -> int {
    c10::cuda::device_synchronize();
    release_pending(/*wait=*/true);
    return 0;
  });
}

// At an op boundary: frees the device blocks whose offload copy finished.
int remat_cuda_op_boundary() {
  return guarded<int>(1, [&]() -> int {
    release_pending(/*wait=*/false);
    return 0;
  });
}

// The reserved (cached) peak since the last reset: what the device really
// held, of which remat_total_peak_bytes() was allocated.
int64_t remat_cuda_reserved_peak_bytes() { return cuda_reserved_peak(); }

// Records a timing event on the compute stream (an op boundary) and
// returns it (null with remat_last_error() set); remat_cuda_event_free
// releases it.
void* remat_cuda_mark() {
  return guarded<void*>(nullptr, [&]() -> void* {
    cudaEvent_t e;
    cuda_check(cudaEventCreate(&e), "cudaEventCreate");
    cuda_check(cudaEventRecord(e, c10::cuda::getCurrentCUDAStream(cuda_state().device).stream()),
               "cudaEventRecord");
    return static_cast<void*>(e);
  });
}

// Seconds from event `a` to event `b`, waiting for `b`; -1 with
// remat_last_error() set.
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

// Pinned host <-> device copy rate (bytes/s) of `bytes`, on the side stream:
// the median over `reps` round trips (one device-to-host and one
// host-to-device copy each) after one warm-up trip, which also pays for the
// first pinned allocation. Returns -1 with remat_last_error() set.
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

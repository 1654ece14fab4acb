// ā^ℓ, the tensors autograd saved for B^ℓ: found with saved-tensor hooks
// while stage ℓ's recording forward runs, and moved to host memory and
// back (offload / prefetch) with the storage moves of storages.cpp.
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/saved_variable_hooks.h>
#include <torch/torch.h>
#include <cstring>
#include <memory>
#include <vector>

#include "internal.h"
#include "remat_shim.h"

using namespace remat_shim;

namespace {

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

}  // namespace

extern "C" {

void remat_install_saved_hooks() {
  static bool done = false;
  if (done) return;
  done = true;
  torch::autograd::set_default_engine_stub(&remat_engine);
}

void* remat_storages_new() { return new SavedStorages(); }
void remat_storages_free(void* set) { delete static_cast<SavedStorages*>(set); }

void remat_storages_record_begin(void* set) {
  auto* s = static_cast<SavedStorages*>(set);
  s->since = g_serial.load();
  g_recording = s;
}
void remat_storages_record_end() { g_recording = nullptr; }

void remat_storages_add(void* set, torch::Tensor* t) { static_cast<SavedStorages*>(set)->add(*t); }

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

}  // extern "C"

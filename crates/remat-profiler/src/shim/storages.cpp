// A storage's bytes replaced under every alias: released (R(a^ℓ),
// R(ā^ℓ) of dtr and delta), restored from a recomputation, or moved
// between device and host memory (offload, prefetch). The StorageImpl and
// every tensor that points at it stay; only its DataPtr changes.
#include <torch/torch.h>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "internal.h"
#include "remat_shim.h"

using namespace remat_shim;

namespace remat_shim {

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

}  // namespace remat_shim

extern "C" {

int64_t remat_storage_discard(torch::Tensor* t) {
  return guarded<int64_t>(-1, [&]() -> int64_t { return discard_storage(*t); });
}

int remat_storage_restore(torch::Tensor* old, torch::Tensor* fresh, int allow_move) {
  return guarded<int>(-1, [&]() -> int { return restore_storage(*old, *fresh, allow_move != 0); });
}

int remat_same_storage(torch::Tensor* a, torch::Tensor* b) {
  return a->defined() && b->defined() && a->has_storage() && b->has_storage() &&
         a->storage().unsafeGetStorageImpl() == b->storage().unsafeGetStorageImpl();
}

}  // extern "C"

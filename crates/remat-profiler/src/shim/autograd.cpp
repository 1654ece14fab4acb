// Autograd from Rust: B^ℓ run from a given output gradient δ^ℓ, handed
// to the engine so that it is freed as in a plain step, and a leaf's
// .grad taken out of it, so that it is freed when Rust drops it.
#include <torch/csrc/autograd/engine.h>
#include <torch/torch.h>
#include <memory>
#include <stdexcept>
#include <type_traits>

#include "internal.h"
#include "remat_shim.h"

using namespace remat_shim;

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

int64_t remat_storage_bytes(torch::Tensor* t) {
  return t->defined() ? static_cast<int64_t>(t->storage().nbytes()) : 0;
}

torch::Tensor* remat_take_grad(torch::Tensor* leaf) {
  torch::Tensor g = leaf->grad();
  leaf->mutable_grad() = torch::Tensor();
  return new torch::Tensor(std::move(g));
}

}  // extern "C"

// The user's own network as TorchScript (feature `torch`): loading a
// scripted nn.Sequential (each child a stage) or per-stage files, running one
// stage's forward, listing the parameters; and writing a small example file
// (the tiny net) for trying the flags without Python.
//
// tch's CModule runs only a module's own methods; a Sequential's children
// are attributes, which only the C++ API reaches (named_children).
#include <torch/script.h>
#include <torch/torch.h>
#include <string>
#include <vector>

#include "remat_shim.h"

namespace {

struct TsStages {
  std::vector<torch::jit::Module> roots;  // keeps every loaded file alive
  std::vector<std::string> names;
  std::vector<torch::jit::Module> stages;
  std::vector<std::string> param_names;
  std::vector<torch::Tensor> params;
};

thread_local std::string g_ts_error;

torch::jit::Module make_stage(const std::string& cls, const std::string& src,
                              std::vector<std::pair<std::string, torch::Tensor>> params) {
  torch::jit::Module m(cls);
  for (auto& [name, t] : params) {
    m.register_parameter(name, t.set_requires_grad(true), /*is_buffer=*/false);
  }
  m.define(src);
  return m;
}

}  // namespace

extern "C" {

const char* remat_ts_last_error() { return g_ts_error.c_str(); }

void* remat_ts_new() { return new TsStages(); }
void remat_ts_free(void* s) { delete static_cast<TsStages*>(s); }

int remat_ts_add(void* set, const char* path, int split, const char* prefix) {
  auto* s = static_cast<TsStages*>(set);
  try {
    torch::jit::Module m = torch::jit::load(path, torch::Device(torch::kCPU));
    m.train(true);
    size_t before = s->stages.size();
    if (split) {
      for (const auto& child : m.named_children()) {
        s->names.push_back(child.name);
        s->stages.push_back(child.value);
      }
      if (s->stages.size() == before) {
        g_ts_error = "it has no children: expected a scripted nn.ModuleList or nn.Sequential (each child a stage)";
        return 1;
      }
    } else {
      std::string name(prefix);
      if (!name.empty() && name.back() == '.') name.pop_back();
      s->names.push_back(name);
      s->stages.push_back(m);
    }
    for (size_t i = before; i < s->stages.size(); ++i) {
      if (!s->stages[i].find_method("forward")) {
        g_ts_error = "stage \"" + s->names[i] + "\" has no forward method";
        return 1;
      }
    }
    for (const auto& p : m.named_parameters(/*recurse=*/true)) {
      bool listed = false;
      for (const auto& q : s->params) listed |= q.unsafeGetTensorImpl() == p.value.unsafeGetTensorImpl();
      if (listed) continue;
      s->param_names.push_back(std::string(prefix) + p.name);
      s->params.push_back(p.value);
    }
    s->roots.push_back(m);
    return 0;
  } catch (const std::exception& e) {
    g_ts_error = e.what();
    return 1;
  }
}

int64_t remat_ts_len(void* set) { return static_cast<int64_t>(static_cast<TsStages*>(set)->stages.size()); }
const char* remat_ts_name(void* set, int64_t i) { return static_cast<TsStages*>(set)->names.at(i).c_str(); }
int64_t remat_ts_num_params(void* set) { return static_cast<int64_t>(static_cast<TsStages*>(set)->params.size()); }
const char* remat_ts_param_name(void* set, int64_t k) {
  return static_cast<TsStages*>(set)->param_names.at(k).c_str();
}
torch::Tensor* remat_ts_param(void* set, int64_t k) {
  return new torch::Tensor(static_cast<TsStages*>(set)->params.at(k));
}

torch::Tensor* remat_ts_forward(void* set, int64_t i, torch::Tensor* x, torch::Tensor* target) {
  auto* s = static_cast<TsStages*>(set);
  try {
    std::vector<torch::jit::IValue> inputs{*x};
    if (target != nullptr) inputs.emplace_back(*target);
    torch::jit::IValue out = s->stages.at(i).forward(inputs);
    if (!out.isTensor()) {
      g_ts_error = "stage \"" + s->names.at(i) + "\" returned " + out.tagKind() + ", not a tensor";
      return nullptr;
    }
    return new torch::Tensor(out.toTensor());
  } catch (const std::exception& e) {
    g_ts_error = e.what();
    return nullptr;
  }
}

int remat_ts_write_example(const char* path, int dir) {
  try {
    torch::manual_seed(7);
    auto w = [](std::vector<int64_t> shape, double scale) { return torch::randn(shape) * scale; };
    const char* conv_src =
        "def forward(self, x):\n"
        "    return torch.relu_(torch.conv2d(x, self.weight, self.bias, [1, 1], [1, 1], [1, 1], 1))\n";
    // The built-in tiny net's layers (nets.rs): six 3×3 conv + in-place ReLU
    // stages, a 2×2 max-pool, and the linear head with the loss.
    std::vector<torch::jit::Module> stages;
    for (int i = 1; i <= 6; ++i) {
      int64_t in = i == 1 ? 3 : 8;
      stages.push_back(make_stage("__torch__.remat_example.Conv" + std::to_string(i), conv_src,
                                  {{"weight", w({8, in, 3, 3}, i == 1 ? 0.2 : 0.1)},
                                   {"bias", w({8}, 0.1)}}));
    }
    stages.push_back(make_stage("__torch__.remat_example.Pool",
                                "def forward(self, x):\n"
                                "    return torch.max_pool2d(x, [2, 2], [2, 2], [0, 0], [1, 1], False)\n",
                                {}));
    stages.push_back(make_stage("__torch__.remat_example.Head",
                                "def forward(self, x, target):\n"
                                "    y = torch.linear(torch.flatten(x, 1), self.weight, self.bias)\n"
                                "    return torch.nll_loss(torch.log_softmax(y, 1), target)\n",
                                {{"weight", w({10, 8 * 8 * 8}, 0.05)}, {"bias", w({10}, 0.1)}}));
    if (dir) {
      for (size_t i = 0; i < stages.size(); ++i) {
        char name[32];
        std::snprintf(name, sizeof name, "/stage_%03zu.pt", i + 1);
        stages[i].save(std::string(path) + name);
      }
    } else {
      torch::jit::Module seq("__torch__.remat_example.Sequential");
      for (size_t i = 0; i < stages.size(); ++i) seq.register_module(std::to_string(i), stages[i]);
      seq.save(path);
    }
    return 0;
  } catch (const std::exception& e) {
    g_ts_error = e.what();
    return 1;
  }
}

}  // extern "C"

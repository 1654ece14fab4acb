// Does a counting c10 CPU allocator see all the memory of a convolution or a
// linear layer, with oneDNN on and off? For each op it prints the counted
// peak (the allocator's bytes above the level before the op) next to the
// process's peak resident memory over the op (VmHWM, reset through
// /proc/self/clear_refs, minus VmRSS before). Large frees go back to the
// kernel (mallopt below), so memory allocated outside c10 would show as RSS
// above the counted peak. The first repetition pays one-time costs (oneDNN's
// JIT code and primitive cache, MKL's buffers); the second is a step's.
//
// Built and run by scripts/profiler-alloc-probe.sh; docs/profiler.md quotes
// its output.
#include <c10/core/CPUAllocator.h>
#include <malloc.h>
#include <torch/torch.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

namespace {
constexpr size_t kHeader = 64;
std::atomic<int64_t> g_current{0}, g_peak{0}, g_calls{0};

void count(int64_t d) {
  int64_t now = g_current.fetch_add(d) + d;
  int64_t p = g_peak.load();
  while (now > p && !g_peak.compare_exchange_weak(p, now)) {
  }
}

void counted_delete(void* data) {
  if (data == nullptr) return;
  char* base = static_cast<char*>(data) - kHeader;
  int64_t n;
  std::memcpy(&n, base, sizeof n);
  count(-n);
  std::free(base);
}

struct CountingAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) override {
    if (n == 0) return {nullptr, nullptr, &counted_delete, c10::Device(c10::DeviceType::CPU)};
    void* base = nullptr;
    if (posix_memalign(&base, kHeader, n + kHeader) != 0) throw std::bad_alloc();
    int64_t bytes = static_cast<int64_t>(n);
    std::memcpy(base, &bytes, sizeof bytes);
    count(bytes);
    g_calls++;
    void* data = static_cast<char*>(base) + kHeader;
    return {data, data, &counted_delete, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &counted_delete; }
  void copy_data(void* d, const void* s, size_t n) const override { default_copy_data(d, s, n); }
} g_allocator;

int64_t status_bytes(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key, 0) == 0) return std::stoll(line.substr(std::strlen(key))) * 1024;
  }
  return -1;
}

double mib(int64_t b) { return b / 1048576.0; }

template <class F>
void probe(const char* what, F f) {
  malloc_trim(0);
  int64_t rss0 = status_bytes("VmRSS:");
  { std::ofstream("/proc/self/clear_refs") << "5"; }  // resets VmHWM to VmRSS
  int64_t c0 = g_current.load(), calls0 = g_calls.load();
  g_peak.store(c0);
  f();
  int64_t rss_peak = status_bytes("VmHWM:") - rss0, counted = g_peak.load() - c0;
  std::printf("  %-26s counted %8.2f MiB   RSS %8.2f MiB   RSS - counted %+7.2f MiB   (%lld c10 allocations)\n",
              what, mib(counted), mib(rss_peak), mib(rss_peak - counted),
              static_cast<long long>(g_calls.load() - calls0));
}
}  // namespace

int main(int argc, char** argv) {
  bool onednn = argc > 1 && std::string(argv[1]) == "on";
  int64_t b = argc > 2 ? std::stoll(argv[2]) : 8, px = argc > 3 ? std::stoll(argv[3]) : 64;
  mallopt(M_MMAP_THRESHOLD, 64 * 1024);
  mallopt(M_TRIM_THRESHOLD, 64 * 1024);
  c10::SetCPUAllocator(&g_allocator, 100);
  at::globalContext().setUserEnabledMkldnn(onednn);
  at::globalContext().setUserEnabledNNPACK(false);
  torch::manual_seed(0);
  std::printf("oneDNN %s, batch %lld, %lld px, %d threads\n", onednn ? "on" : "off",
              static_cast<long long>(b), static_cast<long long>(px), at::get_num_threads());
  for (int64_t cin : {3, 64}) {
    auto conv = torch::nn::Conv2d(torch::nn::Conv2dOptions(cin, 64, 3).padding(1));
    auto x = torch::randn({b, cin, px, px});
    auto xr = x.detach().requires_grad_(true);
    for (int rep = 0; rep < 2; ++rep) {
      std::printf(" conv %lld->64 3x3, repetition %d (output %.2f MiB)\n", static_cast<long long>(cin), rep,
                  mib(b * 64 * px * px * 4));
      probe("forward, no grad", [&] {
        torch::NoGradGuard g;
        auto y = conv(x);
      });
      torch::Tensor y;
      probe("forward, recording", [&] {
        y = conv(xr);
        y.relu_();
      });
      auto g = torch::randn_like(y);
      probe("backward", [&] {
        y.backward(g);
        y = torch::Tensor();
      });
      xr.mutable_grad() = torch::Tensor();
      for (auto& p : conv->parameters()) p.mutable_grad() = torch::Tensor();
    }
  }
  auto fc = torch::nn::Linear(8192, 4096);
  auto x = torch::randn({b, 8192}).requires_grad_(true);
  for (int rep = 0; rep < 2; ++rep) {
    std::printf(" linear 8192->4096, repetition %d (weight %.2f MiB)\n", rep, mib(8192 * 4096 * 4));
    torch::Tensor y;
    probe("forward, recording", [&] { y = fc(x); });
    probe("backward", [&] {
      y.backward(torch::randn_like(y));
      y = torch::Tensor();
    });
    x.mutable_grad() = torch::Tensor();
    for (auto& p : fc->parameters()) p.mutable_grad() = torch::Tensor();
  }
  return 0;
}

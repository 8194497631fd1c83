// hy4-gate-dump: writes random gate inputs and the kernel's output as raw bf16 files
// (attn.bin, gate.bin, out.bin, and sigmoid.bin = the bf16-rounded
// sigmoid_f32 of gate; dense [T, W]) so ci/torch_gate_compare.py can compare
// the kernel with eager PyTorch's `attn_out * torch.sigmoid(gate_score)`.
//   hy4-gate-dump DIR T W SEED
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "device_buffer.h"
#include "gate.h"
#include "platform/hy4_numeric.h"

using namespace hy4;
using namespace hy4::harness;

static void write(const std::string& path, const std::vector<uint16_t>& v) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(v.data(), 2, v.size(), f) != v.size()) {
    std::fprintf(stderr, "hy4-gate-dump: cannot write %s\n", path.c_str());
    std::exit(2);
  }
  std::fclose(f);
}

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: hy4-gate-dump DIR T W SEED\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int64_t T = std::atoll(argv[2]), W = std::atoll(argv[3]);
  std::mt19937_64 rng(std::strtoull(argv[4], nullptr, 0));
  std::normal_distribution<float> attn_d(0.0f, 1.0f), gate_d(0.0f, 4.0f);
  std::vector<uint16_t> ha(T * W), hg(T * W), ho;
  for (auto& v : ha) v = bf16_from_f32(attn_d(rng));
  for (auto& v : hg) v = bf16_from_f32(gate_d(rng));
  ScopedStream s;
  DeviceBuffer<uint16_t> a(T * W), g(T * W), o(T * W);
  a.upload(ha, s);
  g.upload(hg, s);
  GatePlan(dense_gate_args(a.get(), g.get(), o.get(), T, W)).launch(s);
  o.download(ho, s);
  hy4::rt::synchronize(s);
  write(dir + "/attn.bin", ha);
  write(dir + "/gate.bin", hg);
  write(dir + "/out.bin", ho);
  std::vector<uint16_t> hs(T * W);
  for (std::size_t i = 0; i < hs.size(); ++i) hs[i] = bf16_from_f32(sigmoid_f32(bf16_to_f32(hg[i])));
  write(dir + "/sigmoid.bin", hs);
  std::printf("hy4-gate-dump: %s, T=%lld W=%lld written to %s\n", hy4::rt::device_name().c_str(),
              static_cast<long long>(T), static_cast<long long>(W), dir.c_str());
  return 0;
}

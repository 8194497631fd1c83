// executor_properties.cpp: the CPU SIMT executor behaves like a GPU where it matters
// (cpu backend only).  Barriers and warp collectives at warp 32 and 64, shared memory
// that starts as garbage, faults for a barrier or collective that not every thread
// reaches and for reads of unwritten shared memory, launches frozen by value in graphs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "device_buffer.h"
#include "platform/hy4_platform.h"
#include "support/suite.h"

using hy4::harness::DeviceBuffer;
using hy4::harness::ScopedStream;

namespace {

__global__ void warp_sum_kernel(const int* in, int* out) {
  const int tid = threadIdx.x;
  int v = in[blockIdx.x * blockDim.x + tid];
  for (int m = hy4::dev::warp_size() / 2; m > 0; m /= 2) v += hy4::dev::shfl_xor(v, m);
  const uint64_t odd = hy4::dev::ballot((in[blockIdx.x * blockDim.x + tid] & 1) != 0);
  if (hy4::dev::lane_id() == 0) {
    const int w = tid / hy4::dev::warp_size();
    out[2 * (blockIdx.x * (blockDim.x / hy4::dev::warp_size()) + w)] = v;
    out[2 * (blockIdx.x * (blockDim.x / hy4::dev::warp_size()) + w) + 1] = static_cast<int>(__builtin_popcountll(odd));
  }
}

__global__ void block_reverse_kernel(const int* in, int* out) {
  HY4_SHARED(int, buf, 256);
  const int t = threadIdx.x;
  buf[t] = in[blockIdx.x * 256 + t];
  __syncthreads();
  out[blockIdx.x * 256 + t] = buf[255 - t];
}

__global__ void missing_barrier_kernel(const int* in, int* out) {
  HY4_SHARED(int, buf, 256);
  const int t = threadIdx.x;
  buf[t] = in[t];
  out[blockIdx.x * 256 + t] = buf[255 - t];  // no __syncthreads: a race on a GPU
}

__global__ void uninit_shared_kernel(int* out) {
  HY4_SHARED(float, buf, 64);
  out[threadIdx.x] = static_cast<int>(buf[threadIdx.x]);
}

__global__ void shared_out_of_range_kernel(int* out) {
  HY4_SHARED(int, buf, 64);
  buf[threadIdx.x + 1] = 1;  // thread 63 writes buf[64]
  __syncthreads();
  out[threadIdx.x] = 0;
}

__global__ void early_exit_barrier_kernel(int* out) {
  if (threadIdx.x == 3) return;
  __syncthreads();
  out[threadIdx.x] = 1;
}

__global__ void divergent_shuffle_kernel(int* out) {
  int v = threadIdx.x;
  if (threadIdx.x % 2 == 0) v = hy4::dev::shfl_xor(v, 1);
  out[threadIdx.x] = v;
}

__global__ void write_value_kernel(int* out, int value) { out[threadIdx.x] = value; }

template <class F>
std::string fault_of(F&& f) {
  try {
    f();
  } catch (const hy4::cpu::KernelFault& e) {
    return e.what();
  }
  return "";
}

}  // namespace

class Executor : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (hy4::rt::backend() != hy4::rt::Backend::Cpu) GTEST_SKIP() << "executor tests need the cpu backend";
    hy4::rt::set_warp_size(GetParam());
  }
};

TEST_P(Executor, WarpShuffleAndBallotAtThisWarpSize) {
  const int ws = GetParam(), blocks = 5, threads = 128;
  std::vector<int> in(blocks * threads);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>((i * 7919) % 1000);
  DeviceBuffer<int> din(in.size()), dout(2 * in.size() / ws);
  ScopedStream s;
  din.upload(in, s);
  HY4_LAUNCH(warp_sum_kernel, dim3(blocks), dim3(threads), s.get(), din.get(), dout.get());
  std::vector<int> out;
  dout.download(out, s);
  for (int w = 0; w < blocks * threads / ws; ++w) {
    int sum = 0, odd = 0;
    for (int l = 0; l < ws; ++l) {
      sum += in[w * ws + l];
      odd += in[w * ws + l] & 1;
    }
    EXPECT_EQ(out[2 * w], sum) << "warp " << w;
    EXPECT_EQ(out[2 * w + 1], odd) << "warp " << w;
  }
}

TEST_P(Executor, BarrierOrdersSharedMemory) {
  std::vector<int> in(8 * 256);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>(i);
  DeviceBuffer<int> din(in.size()), dout(in.size());
  ScopedStream s;
  din.upload(in, s);
  HY4_LAUNCH(block_reverse_kernel, dim3(8), dim3(256), s.get(), din.get(), dout.get());
  std::vector<int> out;
  dout.download(out, s);
  for (int b = 0; b < 8; ++b)
    for (int t = 0; t < 256; ++t) ASSERT_EQ(out[b * 256 + t], in[b * 256 + 255 - t]);
}

TEST_P(Executor, MissingBarrierIsReportedAsUnwrittenSharedRead) {
  DeviceBuffer<int> din(256), dout(16 * 256);
  ScopedStream s;
  const std::string f = fault_of(
      [&] { HY4_LAUNCH(missing_barrier_kernel, dim3(16), dim3(256), s.get(), din.get(), dout.get()); });
  EXPECT_NE(f.find("which no thread of the block has written"), std::string::npos) << f;
}

TEST_P(Executor, SharedMemoryStartsAsGarbageAndUnwrittenReadsAreReported) {
  DeviceBuffer<int> dout(64);
  ScopedStream s;
  const std::string f = fault_of([&] { HY4_LAUNCH(uninit_shared_kernel, dim3(1), dim3(64), s.get(), dout.get()); });
  EXPECT_NE(f.find("reads buf["), std::string::npos) << f;
  EXPECT_NE(f.find("uninit_shared_kernel"), std::string::npos) << f;
}

TEST_P(Executor, SharedIndexPastTheEndIsReported) {
  DeviceBuffer<int> dout(64);
  ScopedStream s;
  const std::string f =
      fault_of([&] { HY4_LAUNCH(shared_out_of_range_kernel, dim3(1), dim3(64), s.get(), dout.get()); });
  EXPECT_NE(f.find("index 64 is past the end of shared array buf[64]"), std::string::npos) << f;
}

TEST_P(Executor, BarrierNotReachedByEveryThreadIsReported) {
  DeviceBuffer<int> dout(64);
  ScopedStream s;
  const std::string f =
      fault_of([&] { HY4_LAUNCH(early_exit_barrier_kernel, dim3(2), dim3(64), s.get(), dout.get()); });
  EXPECT_NE(f.find("deadlock"), std::string::npos) << f;
  EXPECT_NE(f.find("exited without reaching it"), std::string::npos) << f;
}

TEST_P(Executor, CollectiveNotReachedByEveryLaneIsReported) {
  DeviceBuffer<int> dout(128);
  ScopedStream s;
  const std::string f =
      fault_of([&] { HY4_LAUNCH(divergent_shuffle_kernel, dim3(1), dim3(128), s.get(), dout.get()); });
  EXPECT_NE(f.find("lanes reached a collective"), std::string::npos) << f;
}

TEST_P(Executor, InvalidLaunchShapeIsRefused) {
  DeviceBuffer<int> dout(64);
  ScopedStream s;
  EXPECT_THROW(HY4_LAUNCH(write_value_kernel, dim3(1), dim3(2048), s.get(), dout.get(), 1), hy4::rt::RuntimeError);
  EXPECT_THROW(HY4_LAUNCH(write_value_kernel, dim3(0), dim3(64), s.get(), dout.get(), 1), hy4::rt::RuntimeError);
}

TEST_P(Executor, GraphFreezesLaunchArgumentsByValue) {
  DeviceBuffer<int> dout(64);
  ScopedStream s;
  int host_value = 1;
  hy4::harness::CapturedGraph g(s.get(), [&](hy4::rt::Stream cs) {
    HY4_LAUNCH(write_value_kernel, dim3(1), dim3(64), cs, dout.get(), host_value);
  });
  host_value = 2;  // a GPU graph froze 1; so must we
  g.replay();
  std::vector<int> out;
  dout.download(out, s);
  for (int v : out) ASSERT_EQ(v, 1);
}

INSTANTIATE_TEST_SUITE_P(Warp, Executor, ::testing::Values(32, 64),
                         [](const ::testing::TestParamInfo<int>& i) { return "warp" + std::to_string(i.param); });

// executor_properties.cpp: the CPU SIMT executor behaves like a GPU where it matters
// (cpu backend only).  Barriers and warp collectives at warp 32 and 64, shared memory
// that starts as garbage, faults for a barrier or collective that not every thread
// reaches and for reads of unwritten shared memory (also behind warp collectives: a warp
// may race ahead of the others), for lanes at different collectives, shuffle offsets
// outside the warp and shared arrays declared unlike, each launch limit on both sides,
// misaligned vector accesses, blocks in an order other than launch order, launches frozen
// by value in graphs, a forked child running on threads of its own.
#include <gtest/gtest.h>
#include <unistd.h>  // gettid, alarm

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "device_buffer.h"
#include "fault_case.h"
#include "registry.h"
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

// Every thread zeroes one counter of another warp's row (as a histogram is zeroed by the
// whole block), then - with no barrier - each warp's lane 0 counts into its own row after a
// warp collective.  On a GPU one warp may get there before the others have zeroed its row.
__global__ void missing_barrier_after_collective_kernel(int* out) {
  HY4_SHARED(int, count, 256);
  const int t = threadIdx.x, ws = hy4::dev::warp_size();
  count[(t + ws) % 256] = 0;
  const uint64_t all = hy4::dev::ballot(true);  // a warp collective, not a barrier
  if (hy4::dev::lane_id() == 0) count[t] += static_cast<int>(__builtin_popcountll(all));
  __syncthreads();
  out[blockIdx.x * 256 + t] = count[t];
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

// The threads of a block declare their shared arrays alike (a GPU has one declaration).
// which 0: sizes that differ (HY4_SHARED_UPTO's n, thread-dependent); 1: element types that
// differ; 2: names that differ; 3: alike (no fault).
__global__ void shared_declarations_kernel(int* out, int which) {
  const bool odd = threadIdx.x % 2 != 0;
  if (which == 0) {
    HY4_SHARED_UPTO(int, buf, 64, odd ? 48 : 32);
    buf[threadIdx.x % 32] = 1;
  } else if (which == 1) {
    if (odd) {
      HY4_SHARED(float, buf, 16);
      buf[0] = 1;
    } else {
      HY4_SHARED(double, buf, 16);
      buf[1] = 1;
    }
  } else if (which == 2) {
    if (odd) {
      HY4_SHARED(int, lhs, 16);
      lhs[0] = 1;
    } else {
      HY4_SHARED(int, rhs, 16);
      rhs[1] = 1;
    }
  } else {
    HY4_SHARED_UPTO(int, buf, 64, 32);
    buf[threadIdx.x % 32] = 1;
  }
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

// Even lanes at one warp collective, odd lanes at another: on a GPU the warp waits forever
// or mixes two exchanges.  mix 0: shfl_xor beside shfl_down (one op, two kinds); mix 1:
// shfl_xor beside ballot.
__global__ void mixed_collectives_kernel(int* out, int mix) {
  int v = threadIdx.x;
  if (threadIdx.x % 2 == 0)
    v = hy4::dev::shfl_xor(v, 1);
  else if (mix == 0)
    v = hy4::dev::shfl_down(v, 1);
  else
    v = static_cast<int>(hy4::dev::ballot(true) & 1);
  out[threadIdx.x] = v;
}

// The edges every GPU agrees on.  shfl_down past the warp's last lane returns the lane's
// own value; shfl_idx takes its source lane modulo the warp (CUDA's shfl.sync keeps the
// low 5 bits, HIP's __shfl reaches ds_bpermute's wrapped address); shfl_xor with ws - 1
// reverses the warp.
__global__ void shuffle_edges_kernel(int* out) {
  const int ws = hy4::dev::warp_size(), lane = hy4::dev::lane_id();
  const int v = 1000 + static_cast<int>(threadIdx.x);
  int* o = out + 4 * threadIdx.x;
  o[0] = hy4::dev::shfl_down(v, ws - 1);
  o[1] = hy4::dev::shfl_idx(v, lane + ws);
  o[2] = hy4::dev::shfl_idx(v, -1);
  o[3] = hy4::dev::shfl_xor(v, ws - 1);
}

// kind 0: shfl_xor(v, arg); 1: shfl_down(v, arg).
__global__ void shuffle_offset_kernel(int* out, int kind, int arg) {
  const int v = static_cast<int>(threadIdx.x);
  out[threadIdx.x] = kind == 0 ? hy4::dev::shfl_xor(v, arg) : hy4::dev::shfl_down(v, arg);
}

// Votes of every warp of the block, the last one partial when blockDim is not a multiple
// of the warp: out[3t] = all(p), out[3t + 1] = any(p), out[3t + 2] = popcount(ballot(p)).
__global__ void warp_votes_kernel(const int* p, int* out) {
  const int t = static_cast<int>(threadIdx.x);
  const bool mine = p[t] != 0;
  out[3 * t] = hy4::dev::all(mine) ? 1 : 0;
  out[3 * t + 1] = hy4::dev::any(mine) ? 1 : 0;
  out[3 * t + 2] = static_cast<int>(__builtin_popcountll(hy4::dev::ballot(mine)));
}

__global__ void shuffle_down_one_kernel(int* out) {
  out[threadIdx.x] = hy4::dev::shfl_down(static_cast<int>(threadIdx.x), 1);
}

__global__ void write_value_kernel(int* out, int value) { out[threadIdx.x] = value; }

// Copies 16-byte (F32x4) or 8-byte (F32x2) vectors from in + offset to out + offset
// (offsets in floats): aligned only when the offset is a multiple of the vector.
template <class V>
__global__ void vector_copy_kernel(const float* in, int in_offset, float* out, int out_offset) {
  const V v = reinterpret_cast<const V*>(in + in_offset)[threadIdx.x];
  reinterpret_cast<V*>(out + out_offset)[threadIdx.x] = v;
}

// Each block takes the next ticket: order[ticket] = linear block index.
__global__ void block_order_kernel(int* counter, int* order) {
  if (threadIdx.x == 0) order[__atomic_fetch_add(counter, 1, __ATOMIC_SEQ_CST)] = static_cast<int>(blockIdx.x);
}

// Each thread takes a ticket from its block's counter as it starts: out holds the order
// in which the executor ran the block's threads.
__global__ void thread_order_kernel(int* counters, int* out) {
  const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  out[t] = __atomic_fetch_add(&counters[blockIdx.x], 1, __ATOMIC_SEQ_CST);
}

// Thread i writes out[i]: launched with more threads than out has elements, it writes
// past the end of the buffer.
__global__ void write_index_kernel(int* out) { out[threadIdx.x] = static_cast<int>(threadIdx.x); }
__global__ void read_at_kernel(const int* in, int64_t i, int* out) { out[0] = in[i]; }

// Block 1's thread 5 loops without end when stride is 0 (the volatile store keeps the
// loop a side effect the compiler may not drop); every other thread ends at once.
__global__ void endless_thread_kernel(int* out, int stride) {
  if (blockIdx.x != 1 || threadIdx.x != 5) return;
  volatile int* v = out;
  for (int i = 0; i < 8; i += stride) v[0] = i;
}
// Every warp loops through ballots without end when stride is 0: its threads come back
// to the scheduler at each collective, and still never finish.
__global__ void endless_collective_kernel(int* out, int stride) {
  int n = 0;
  for (int i = 0; i < 8; i += stride) n += static_cast<int>(hy4::dev::ballot(i >= 0) & 1);
  out[threadIdx.x] = n;
}

// Dependent launches (HY4_LAUNCH_PRIMARY_IF / HY4_LAUNCH_DEPENDENT_IF): the primary copies
// in[0] to every element of out; the dependent copies src to dst, reading before or after
// its dev::wait_prior_grid() (or never waiting).
__global__ void primary_fill_kernel(const int* in, int* out) {
  hy4::dev::launch_dependents();
  out[blockIdx.x * blockDim.x + threadIdx.x] = in[0];
}
__global__ void dependent_copy_kernel(const int* src, int* dst, bool read_before_wait, bool wait) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  int v = read_before_wait ? src[i] : -1;
  if (wait) hy4::dev::wait_prior_grid();
  if (!read_before_wait) v = src[i];
  dst[i] = v;
}
// Half the threads wait before a barrier, half after it (and a warp collective between).
__global__ void dependent_barrier_kernel(const int* src, int* dst) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (threadIdx.x % 2 == 0) hy4::dev::wait_prior_grid();
  __syncthreads();
  const uint64_t b = hy4::dev::ballot(true);
  if (threadIdx.x % 2 == 1) hy4::dev::wait_prior_grid();
  dst[i] = src[i] + (b != 0 ? 0 : 1000);
}

// A primary that records the OS thread that ran its blocks (host code: this kernel runs
// only on the CPU executor), then fills out as primary_fill_kernel does.
std::atomic<long> g_primary_thread{0};  // a kernel thread id: a new thread gets a new one (std::thread::id values are reused)
__global__ void primary_thread_kernel(const int* in, int* out) {
  hy4::dev::launch_dependents();
  g_primary_thread.store(static_cast<long>(::gettid()));
  out[blockIdx.x * blockDim.x + threadIdx.x] = in[0];
}

// Thread 0 of each block sleeps ms milliseconds (host code: this kernel runs only on the
// CPU executor), then every thread writes its index.
__global__ void slow_block_kernel(int* out, int ms) {
  if (threadIdx.x == 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  out[threadIdx.x] = static_cast<int>(threadIdx.x);
}

// Sets an environment variable for a scope, then puts back what was there (or its absence).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* was = std::getenv(name)) {
      previous_ = was;
      had_ = true;
    }
    set(value);
  }
  void set(const std::string& value) { ::setenv(name_, value.c_str(), 1); }
  ~ScopedEnv() {
    if (had_) ::setenv(name_, previous_.c_str(), 1); else ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string previous_;
  bool had_ = false;
};

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

// The same race behind warp collectives: a round-robin schedule lets every thread zero its
// counter before any warp passes its ballot; the warp-greedy one (half the blocks) runs one
// warp through its ballot before the other warps have started.
TEST_P(Executor, MissingBarrierBehindAWarpCollectiveIsReported) {
  DeviceBuffer<int> dout(16 * 256);
  ScopedStream s;
  const std::string f = fault_of(
      [&] { HY4_LAUNCH(missing_barrier_after_collective_kernel, dim3(16), dim3(256), s.get(), dout.get()); });
  EXPECT_NE(f.find("which no thread of the block has written"), std::string::npos) << f;
}

TEST_P(Executor, SharedMemoryStartsAsGarbageAndUnwrittenReadsAreReported) {
  DeviceBuffer<int> dout(64);
  ScopedStream s;
  const std::string f = fault_of([&] { HY4_LAUNCH(uninit_shared_kernel, dim3(1), dim3(64), s.get(), dout.get()); });
  EXPECT_NE(f.find("reads buf["), std::string::npos) << f;
  EXPECT_NE(f.find("uninit_shared_kernel"), std::string::npos) << f;
}

// A shared-memory read converts implicitly to the element's type only, so that it mixes
// in expressions as a GPU array element does.  With a plain conversion operator,
// `c ? buf[i] : 0` was int on the CPU executor (the proxy converted to int first): a
// 64-bit ballot mask cut to 32 bits, fine on a GPU (found by the topk block path's
// 2026-12-03 candidate-floor variant).  Now the built-in conditional of (T, int) applies,
// as on a GPU; explicit casts still compile.
template <class R>
using ConditionalWithInt = decltype(true ? std::declval<R>() : 0);
static_assert(std::is_same_v<ConditionalWithInt<hy4::cpu::SharedRef<uint64_t>>, uint64_t>,
              "c ? shared_u64[i] : 0 must be uint64_t, as on a GPU");
static_assert(std::is_same_v<ConditionalWithInt<hy4::cpu::SharedRef<float>>, float>, "c ? shared_f32[i] : 0 is float");
static_assert(!std::is_convertible_v<hy4::cpu::SharedRef<uint64_t>, int>, "implicit narrowing of a shared read");
static_assert(!std::is_convertible_v<hy4::cpu::SharedRef<float>, double>, "implicit conversion of a shared read");
static_assert(std::is_convertible_v<hy4::cpu::SharedRef<uint64_t>, uint64_t>, "a shared read is its element");
static_assert(std::is_constructible_v<int, hy4::cpu::SharedRef<float>>, "explicit casts of a shared read");

__global__ void shared_mask_kernel(uint64_t* out) {
  HY4_SHARED(uint64_t, masks, 4);
  const int t = threadIdx.x;
  if (t < 4) masks[t] = (uint64_t{0xA5} << 56) | static_cast<uint64_t>(t);
  __syncthreads();
  const uint64_t m = t < 4 ? masks[t] : 0;  // uint64_t on a GPU, and here
  out[t] = m + static_cast<uint64_t>(static_cast<int>(masks[t % 4]) == t % 4 ? 0 : 1);
}

TEST_P(Executor, SharedReadsKeepTheirElementType) {
  DeviceBuffer<uint64_t> dout(8);
  ScopedStream s;
  HY4_LAUNCH(shared_mask_kernel, dim3(1), dim3(8), s.get(), dout.get());
  std::vector<uint64_t> out;
  dout.download(out, s);
  for (int t = 0; t < 8; ++t) EXPECT_EQ(out[t], t < 4 ? (uint64_t{0xA5} << 56) | static_cast<uint64_t>(t) : 0u) << t;
}

TEST_P(Executor, SharedIndexPastTheEndIsReported) {
  DeviceBuffer<int> dout(64);
  ScopedStream s;
  const std::string f =
      fault_of([&] { HY4_LAUNCH(shared_out_of_range_kernel, dim3(1), dim3(64), s.get(), dout.get()); });
  EXPECT_NE(f.find("index 64 is past the end of shared array buf[64]"), std::string::npos) << f;
}

TEST_P(Executor, SharedArraysDeclaredUnlikeByTwoThreadsAreReported) {
  DeviceBuffer<int> dout(64);
  // Which thread declares first is the schedule's: each message holds both declarations.
  const std::vector<std::vector<std::string>> want = {{"'buf' [48]", "'buf' [32]"}, {"'buf' [16] here but as 'buf' [16]"},
                                                      {"'lhs' [16]", "'rhs' [16]"}};
  for (int which = 0; which < 4; ++which) {
    ScopedStream s;
    const std::string f =
        fault_of([&] { HY4_LAUNCH(shared_declarations_kernel, dim3(1), dim3(64), s.get(), dout.get(), which); });
    if (which == 3) {
      EXPECT_EQ(f, "") << "declarations alike";
      continue;
    }
    EXPECT_NE(f.find("shared array #0 declared as"), std::string::npos) << "case " << which << ": " << f;
    for (const std::string& part : want[static_cast<std::size_t>(which)])
      EXPECT_NE(f.find(part), std::string::npos) << "case " << which << ": " << f;
  }
}

// A write one element past the end of a device buffer (the red zone after every
// allocation) fails the launch naming the kernel; writing exactly the buffer does not.
TEST_P(Executor, WritePastTheEndOfADeviceBufferIsReported) {
  DeviceBuffer<int> d(63);
  ScopedStream s;
  EXPECT_EQ(fault_of([&] { HY4_LAUNCH(write_index_kernel, dim3(1), dim3(63), s.get(), d.get()); }), "");
  const std::string f = fault_of([&] { HY4_LAUNCH(write_index_kernel, dim3(1), dim3(64), s.get(), d.get()); });
  EXPECT_NE(f.find("write 0 bytes past the end of a device allocation of 252 bytes"), std::string::npos) << f;
  EXPECT_NE(f.find("write_index_kernel"), std::string::npos) << f;
  EXPECT_EQ(fault_of([&] { HY4_LAUNCH(write_index_kernel, dim3(1), dim3(63), s.get(), d.get()); }), "")
      << "the red zone is restored after a report";
}

// A read (or write) past the end of a device buffer beyond its 256-byte rounding lands
// on the guard page after it: the kernel thread dies with SIGSEGV, and the executor's
// fault reporter names the kernel, block and thread first (a GPU: an illegal memory
// access).  Reading the last element is fine.
TEST_P(Executor, ReadPastTheEndOfADeviceBufferFaultsNamingTheThread) {
  DeviceBuffer<int> in(64), out(1);
  ScopedStream s;
  EXPECT_EQ(fault_of([&] { HY4_LAUNCH(read_at_kernel, dim3(1), dim3(1), s.get(), in.get(), int64_t{63}, out.get()); }), "");
#if !defined(HY4_ASAN)
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(HY4_LAUNCH(read_at_kernel, dim3(1), dim3(1), s.get(), in.get(), int64_t{64}, out.get()),
               "kernel read_at_kernel, block \\(0,0,0\\), thread \\(0,0,0\\): invalid memory access");
  // A buffer of exactly one page ends flush with its guard page too, and starts flush with
  // the one before it: index -1 faults.
  const int64_t page_ints = sysconf(_SC_PAGESIZE) / static_cast<int64_t>(sizeof(int));
  DeviceBuffer<int> page_in(static_cast<std::size_t>(page_ints));
  EXPECT_EQ(fault_of([&] { HY4_LAUNCH(read_at_kernel, dim3(1), dim3(1), s.get(), page_in.get(), page_ints - 1, out.get()); }),
            "");
  EXPECT_DEATH(HY4_LAUNCH(read_at_kernel, dim3(1), dim3(1), s.get(), page_in.get(), page_ints, out.get()),
               "kernel read_at_kernel, block \\(0,0,0\\), thread \\(0,0,0\\): invalid memory access");
  EXPECT_DEATH(HY4_LAUNCH(read_at_kernel, dim3(1), dim3(1), s.get(), page_in.get(), int64_t{-1}, out.get()),
               "kernel read_at_kernel, block \\(0,0,0\\), thread \\(0,0,0\\): invalid memory access");
#endif
}

// A case whose launches fault leaves its case file (harness/fault_case.h): a
// KernelFault thrown out of a KeepCaseOnFault scope writes it on the way and goes on
// unchanged; a SIGSEGV in a kernel thread writes it before the process dies; a scope
// that closes normally writes nothing.
TEST_P(Executor, AFaultingCaseLeavesItsCaseFile) {
  const std::string dir = ::testing::TempDir() + "hy4_fault_cases_warp" + std::to_string(GetParam());
  const ScopedEnv case_dir("HY4_CASE_DIR", dir);
  auto file_of = [](int64_t seed) {
    return [seed] {
      hy4::harness::CaseFile c;
      c.op = "gate";
      c.ints["seed"] = seed;
      return c;
    };
  };
  auto path_of = [&](int64_t seed) { return dir + "/gate.fault." + std::to_string(seed) + ".case"; };
  const int64_t base = 9100 + 10 * GetParam();
  for (int64_t i = 0; i < 3; ++i) std::remove(path_of(base + i).c_str());
  DeviceBuffer<int> d(64), in(64), out(1);
  ScopedStream s;
  {
    const hy4::harness::KeepCaseOnFault keep(file_of(base), false);
    HY4_LAUNCH(write_index_kernel, dim3(1), dim3(64), s.get(), d.get());
  }
  EXPECT_FALSE(std::ifstream(path_of(base)).good()) << "a case without a fault wrote " << path_of(base);
  EXPECT_THROW(
      {
        const hy4::harness::KeepCaseOnFault keep(file_of(base + 1), false);
        HY4_LAUNCH(shared_out_of_range_kernel, dim3(1), dim3(64), s.get(), d.get());
      },
      hy4::cpu::KernelFault);
  const hy4::harness::CaseFile thrown = hy4::harness::CaseFile::read(path_of(base + 1));
  EXPECT_EQ(thrown.get("seed"), base + 1);
  EXPECT_NE(thrown.text_or("fault", ""), "");
#if !defined(HY4_ASAN)
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        const hy4::harness::KeepCaseOnFault keep(file_of(base + 2), true);
        HY4_LAUNCH(read_at_kernel, dim3(1), dim3(1), s.get(), in.get(), int64_t{64}, out.get());
      },
      "case written to .*gate\\.fault\\." + std::to_string(base + 2) + "\\.case; replay: hy4-repro --warp " +
          std::to_string(GetParam()) + " --graph");
  const hy4::harness::CaseFile died = hy4::harness::CaseFile::read(path_of(base + 2));
  EXPECT_NE(died.text_or("fault", "").find("unmapped memory"), std::string::npos);
#endif
}

// A kernel thread that never ends hangs a GPU's launch.  The executor's watchdog
// (HY4_CPU_BLOCK_TIMEOUT_S, default 60 s) ends the process instead: it names the kernel,
// the running blocks and threads, and the open case writes its case file first.  Here the
// limit is 1 s (every launch reads it).  Both kinds of endless loop: one thread that
// never comes back to the scheduler, and warps that come back at every collective but
// never finish.  With a stride of 1 the same kernels end, and a launch of many short
// blocks that takes longer than the limit in all is not stopped: it times blocks.
TEST_P(Executor, AKernelThatNeverEndsIsStoppedByTheWatchdog) {
  const std::string dir = ::testing::TempDir() + "hy4_hung_cases_warp" + std::to_string(GetParam());
  const ScopedEnv case_dir("HY4_CASE_DIR", dir);
  const ScopedEnv limit("HY4_CPU_BLOCK_TIMEOUT_S", "1");
  const int64_t seed = 9200 + GetParam();
  const std::string path = dir + "/gate.fault." + std::to_string(seed) + ".case";
  std::remove(path.c_str());
  DeviceBuffer<int> d(256);
  ScopedStream s;
  HY4_LAUNCH(endless_thread_kernel, dim3(3), dim3(64), s.get(), d.get(), 1);
  HY4_LAUNCH(endless_collective_kernel, dim3(2), dim3(128), s.get(), d.get(), 1);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // (A death test's child runs the test's lines before its own statement again, and
  // skips the other statements: the case file is read only after the last one.)
  EXPECT_DEATH(HY4_LAUNCH(endless_collective_kernel, dim3(2), dim3(128), s.get(), d.get(), 0),
               "kernel endless_collective_kernel .* a block still runs after 1 s(.|\n)*block \\([01],0,0\\) running for");
  // The only block hangs: block 0 is watched like any other (the alarm stops a child whose
  // watchdog never fires).
  auto lone_block = [&] {
    ::alarm(20);
    HY4_LAUNCH(endless_collective_kernel, dim3(1), dim3(128), s.get(), d.get(), 0);
  };
  EXPECT_DEATH(lone_block(),
               "kernel endless_collective_kernel .* a block still runs after 1 s(.|\n)*block \\(0,0,0\\) running for");
  EXPECT_DEATH(
      {
        const hy4::harness::KeepCaseOnFault keep([seed] {
          hy4::harness::CaseFile c;
          c.op = "gate";
          c.ints["seed"] = seed;
          return c;
        }, false);
        HY4_LAUNCH(endless_thread_kernel, dim3(3), dim3(64), s.get(), d.get(), 0);
      },
      "kernel endless_thread_kernel \\(grid \\(3,1,1\\), block \\(64,1,1\\), warp " + std::to_string(GetParam()) +
          "\\): a block still runs after 1 s \\(HY4_CPU_BLOCK_TIMEOUT_S\\).*; [123] of 3 blocks started\\."
          "(.|\n)*block \\(1,0,0\\) running for [0-9]+ s, thread \\(5,0,0\\) last resumed(.|\n)*case written to");
  const hy4::harness::CaseFile hung = hy4::harness::CaseFile::read(path);
  EXPECT_NE(hung.text_or("fault", "").find("HY4_CPU_BLOCK_TIMEOUT_S"), std::string::npos) << hung.text_or("fault", "");
  // Blocks of 0.4 s, four per executor thread: 1.6 s or more in all (last: a death
  // test's child does not get this far).
  const char* threads_env = std::getenv("HY4_CPU_THREADS");
  const unsigned threads = threads_env ? unsigned(std::atoi(threads_env)) : std::thread::hardware_concurrency();
  const auto t0 = std::chrono::steady_clock::now();
  HY4_LAUNCH(slow_block_kernel, dim3(4 * std::max(threads, 1u)), dim3(64), s.get(), d.get(), 400);
  EXPECT_GT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1200))
      << "the long launch took less than the limit: it shows nothing";
}

// A watchdog limit that is not whole seconds is refused by the launch, naming the
// variable; 0 turns the watchdog off.
TEST_P(Executor, AnUnreadableWatchdogLimitIsRefusedByName) {
  ScopedEnv limit("HY4_CPU_BLOCK_TIMEOUT_S", "");
  DeviceBuffer<int> d(64);
  ScopedStream s;
  for (const char* bad : {"2m", "", "-1", "1e9", "86401"}) {
    limit.set(bad);
    try {
      HY4_LAUNCH(write_value_kernel, dim3(1), dim3(64), s.get(), d.get(), 1);
      ADD_FAILURE() << "HY4_CPU_BLOCK_TIMEOUT_S='" << bad << "' was accepted";
    } catch (const hy4::rt::RuntimeError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("HY4_CPU_BLOCK_TIMEOUT_S='") + bad + "'"), std::string::npos)
          << e.what();
    }
  }
  limit.set("0");
  EXPECT_NO_THROW(HY4_LAUNCH(write_value_kernel, dim3(1), dim3(64), s.get(), d.get(), 1));
}

// Freeing a device pointer twice (or one malloc_device never gave) is an error, as
// cudaFree / hipFree report it; freeing nullptr is not.
TEST_P(Executor, FreeingADeviceBufferTwiceIsRefused) {
  void* p = hy4::rt::malloc_device(64);
  hy4::rt::free_device(p);
  EXPECT_THROW(hy4::rt::free_device(p), hy4::rt::RuntimeError);
  int host = 0;
  EXPECT_THROW(hy4::rt::free_device(&host), hy4::rt::RuntimeError);
  EXPECT_NO_THROW(hy4::rt::free_device(nullptr));
}

// copy_2d_on_device (hy4-bench's pitched copy) copies rows x width bytes, no row and no
// byte of a row more; zero rows or zero width copy nothing.
TEST_P(Executor, PitchedCopyCopiesItsRowsAndNothingElse) {
  constexpr std::size_t pitch = 32, width = 24, rows = 3, all = 5 * pitch;
  std::vector<unsigned char> src(all), init(all, 0xAB);
  for (std::size_t i = 0; i < all; ++i) src[i] = static_cast<unsigned char>(i);
  DeviceBuffer<unsigned char> dsrc(all), ddst(all);
  ScopedStream s;
  dsrc.upload(src, s);
  for (const auto& [w, r] : {std::pair<std::size_t, std::size_t>{width, rows}, {0, rows}, {width, 0}}) {
    ddst.upload(init, s);
    hy4::rt::copy_2d_on_device(ddst.get(), pitch, dsrc.get(), pitch, w, r, s.get());
    std::vector<unsigned char> got;
    ddst.download(got, s);
    for (std::size_t i = 0; i < all; ++i) {
      const bool copied = i / pitch < r && i % pitch < w;
      ASSERT_EQ(got[i], copied ? src[i] : 0xAB) << "width " << w << ", rows " << r << ": byte " << i;
    }
  }
}

TEST_P(Executor, BarrierNotReachedByEveryThreadIsReported) {
  DeviceBuffer<int> dout(64);
  ScopedStream s;
  const std::string f =
      fault_of([&] { HY4_LAUNCH(early_exit_barrier_kernel, dim3(2), dim3(64), s.get(), dout.get()); });
  EXPECT_NE(f.find("deadlock"), std::string::npos) << f;
  // The counts and the first thread of each kind: 63 wait, thread 3 exited.
  EXPECT_NE(f.find("63 of 64 threads wait at __syncthreads (first: thread 0), 1 exited without reaching it "
                   "(first: thread 3)"),
            std::string::npos)
      << f;
}

TEST_P(Executor, CollectiveNotReachedByEveryLaneIsReported) {
  DeviceBuffer<int> dout(128);
  ScopedStream s;
  const std::string f =
      fault_of([&] { HY4_LAUNCH(divergent_shuffle_kernel, dim3(1), dim3(128), s.get(), dout.get()); });
  // Even lanes wait at the shuffle, odd lanes (half the block) exited.
  const int ws = GetParam();
  EXPECT_NE(f.find("warp 0: thread 0 waits at shfl_xor but only " + std::to_string(ws / 2) + " of " +
                   std::to_string(ws) + " lanes reached a collective (64 threads of the block exited, first: thread 1)"),
            std::string::npos)
      << f;
}

// all / any / ballot over full warps and a partial last warp (only its lanes vote).
TEST_P(Executor, WarpVotesCountTheLanesThatExist) {
  const int ws = GetParam(), threads = 2 * ws + ws / 2;
  // Every lane true but one of warp 1: warps 0 and 2 (partial) all true, warp 1 all false, any true.
  std::vector<int> p(static_cast<std::size_t>(threads), 1);
  p[static_cast<std::size_t>(ws + 3)] = 0;
  DeviceBuffer<int> dp(p.size()), dout(3 * p.size());
  ScopedStream s;
  dp.upload(p, s);
  HY4_LAUNCH(warp_votes_kernel, dim3(1), dim3(threads), s.get(), dp.get(), dout.get());
  std::vector<int> out;
  dout.download(out, s);
  for (int t = 0; t < threads; ++t) {
    const int first = t / ws * ws, last = std::min(first + ws, threads);
    int count = 0;
    for (int i = first; i < last; ++i) count += p[static_cast<std::size_t>(i)];
    EXPECT_EQ(out[3 * t], count == last - first ? 1 : 0) << "all, thread " << t;
    EXPECT_EQ(out[3 * t + 1], count > 0 ? 1 : 0) << "any, thread " << t;
    EXPECT_EQ(out[3 * t + 2], count) << "ballot, thread " << t;
  }
  // A warp of no true lane: all false, any false, an empty ballot.
  std::vector<int> none(static_cast<std::size_t>(threads), 0);
  dp.upload(none, s);
  HY4_LAUNCH(warp_votes_kernel, dim3(1), dim3(threads), s.get(), dp.get(), dout.get());
  dout.download(out, s);
  for (int t = 0; t < threads; ++t)
    EXPECT_EQ((std::vector<int>{out[3 * t], out[3 * t + 1], out[3 * t + 2]}), (std::vector<int>{0, 0, 0}))
        << "thread " << t;
}

// A partial last warp: shfl_down(v, 1) on its last lane reads a lane that does not exist.
TEST_P(Executor, ShuffleFromALaneThePartialWarpLacksIsReported) {
  const int ws = GetParam(), threads = ws + ws / 2;
  DeviceBuffer<int> dout(static_cast<std::size_t>(2 * ws));
  ScopedStream s;
  const std::string f =
      fault_of([&] { HY4_LAUNCH(shuffle_down_one_kernel, dim3(1), dim3(threads), s.get(), dout.get()); });
  EXPECT_NE(f.find("shfl_down reads lane " + std::to_string(ws / 2) + " of warp 1, which has only " +
                   std::to_string(ws / 2) + " threads"),
            std::string::npos)
      << f;
  // Whole warps: the last lane gets its own value, no fault.
  ScopedStream s2;
  EXPECT_EQ(fault_of([&] { HY4_LAUNCH(shuffle_down_one_kernel, dim3(1), dim3(2 * ws), s2.get(), dout.get()); }), "");
}

TEST_P(Executor, LanesAtDifferentCollectivesAreReported) {
  DeviceBuffer<int> dout(128);
  for (int mix : {0, 1}) {
    ScopedStream s;
    const std::string f =
        fault_of([&] { HY4_LAUNCH(mixed_collectives_kernel, dim3(1), dim3(128), s.get(), dout.get(), mix); });
    EXPECT_NE(f.find("stand at different warp collectives"), std::string::npos) << "mix " << mix << ": " << f;
    EXPECT_NE(f.find(mix == 0 ? "shfl_down" : "ballot"), std::string::npos) << "mix " << mix << ": " << f;
  }
}

TEST_P(Executor, ShuffleEdgesFollowTheGpu) {
  const int ws = GetParam(), threads = 128;
  DeviceBuffer<int> dout(4 * threads);
  ScopedStream s;
  HY4_LAUNCH(shuffle_edges_kernel, dim3(1), dim3(threads), s.get(), dout.get());
  std::vector<int> out;
  dout.download(out, s);
  for (int t = 0; t < threads; ++t) {
    const int lane = t % ws, first = t - lane;
    EXPECT_EQ(out[4 * t + 0], 1000 + (lane == 0 ? first + ws - 1 : t)) << "shfl_down(v, ws - 1), thread " << t;
    EXPECT_EQ(out[4 * t + 1], 1000 + t) << "shfl_idx(v, lane + ws), thread " << t;
    EXPECT_EQ(out[4 * t + 2], 1000 + first + ws - 1) << "shfl_idx(v, -1), thread " << t;
    EXPECT_EQ(out[4 * t + 3], 1000 + first + (lane ^ (ws - 1))) << "shfl_xor(v, ws - 1), thread " << t;
  }
}

TEST_P(Executor, ShuffleOffsetOutsideTheWarpIsReported) {
  const int ws = GetParam();
  DeviceBuffer<int> dout(128);
  for (int kind : {0, 1}) {
    const char* name = kind == 0 ? "shfl_xor" : "shfl_down";
    for (int arg : {-1, ws, ws + 1, -ws}) {
      ScopedStream s;
      const std::string f =
          fault_of([&] { HY4_LAUNCH(shuffle_offset_kernel, dim3(1), dim3(128), s.get(), dout.get(), kind, arg); });
      EXPECT_NE(f.find(std::string(name) + " with"), std::string::npos) << name << "(v, " << arg << "): " << f;
      EXPECT_NE(f.find("outside [0, " + std::to_string(ws) + ")"), std::string::npos) << name << "(v, " << arg << "): " << f;
    }
    for (int arg : {0, 1, ws - 1}) {
      ScopedStream s;
      EXPECT_EQ(fault_of([&] { HY4_LAUNCH(shuffle_offset_kernel, dim3(1), dim3(128), s.get(), dout.get(), kind, arg); }),
                "")
          << name << "(v, " << arg << ")";
    }
  }
}

TEST_P(Executor, InvalidLaunchShapeIsRefused) {
  DeviceBuffer<int> dout(64);
  ScopedStream s;
  // Each of a GPU's launch limits, one past it (refused, naming the shape) and at it (runs):
  // 1024 threads a block, block.z <= 64, grid.y and grid.z <= 65535, grid.x < 2^31.
  const std::pair<dim3, dim3> refused[] = {
      {dim3(1), dim3(2048)},          {dim3(1), dim3(1025)},           {dim3(1), dim3(32, 16, 3)},
      {dim3(1), dim3(0, 1, 1)},       {dim3(1), dim3(1, 0, 1)},        {dim3(1), dim3(1, 1, 0)},
      {dim3(1), dim3(1, 1, 65)},      {dim3(0), dim3(64)},             {dim3(1, 0, 1), dim3(64)},
      {dim3(1, 1, 0), dim3(64)},      {dim3(1, 65536, 1), dim3(64)},   {dim3(1, 1, 65536), dim3(64)},
      {dim3(0x80000000u), dim3(64)}};
  auto shape_of = [](dim3 grid, dim3 block) {  // as the executor's refusal writes it
    return "grid (" + std::to_string(grid.x) + "," + std::to_string(grid.y) + "," + std::to_string(grid.z) +
           ") block (" + std::to_string(block.x) + "," + std::to_string(block.y) + "," + std::to_string(block.z) +
           ")";
  };
  for (const auto& [grid, block] : refused) {
    const std::string shape = shape_of(grid, block);
    try {
      HY4_LAUNCH(write_value_kernel, grid, block, s.get(), dout.get(), 1);
      ADD_FAILURE() << shape << " was launched";
    } catch (const hy4::rt::RuntimeError& e) {
      EXPECT_NE(std::string(e.what()).find("invalid configuration " + shape), std::string::npos) << e.what();
    }
  }
  DeviceBuffer<int> wide(1024);
  const std::pair<dim3, dim3> accepted[] = {{dim3(1), dim3(1024)},       {dim3(1), dim3(16, 1, 64)},
                                            {dim3(1, 65535, 1), dim3(1)}, {dim3(1, 1, 65535), dim3(1)},
                                            {dim3(1), dim3(8, 8, 16)}};
  for (const auto& [grid, block] : accepted)
    EXPECT_NO_THROW(HY4_LAUNCH(write_value_kernel, grid, block, s.get(), wide.get(), 1)) << shape_of(grid, block);
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

TEST_P(Executor, MisalignedVectorAccessIsReportedAsAGpuWould) {
  DeviceBuffer<float> din(4 * 64 + 8), dout(4 * 64 + 8);
  ScopedStream s;
  std::vector<float> zeros(din.size(), 0.0f);
  din.upload(zeros, s);
  // Aligned: no fault, the data arrives.
  EXPECT_EQ(fault_of([&] { HY4_LAUNCH(vector_copy_kernel<hy4::dev::F32x4>, dim3(1), dim3(64), s.get(), din.get(), 4, dout.get(), 8); }), "");
  EXPECT_EQ(fault_of([&] { HY4_LAUNCH(vector_copy_kernel<hy4::dev::F32x2>, dim3(1), dim3(64), s.get(), din.get(), 2, dout.get(), 6); }), "");
  // 16-byte load 8 bytes off, 16-byte store 4 bytes off, 8-byte load 4 bytes off.
  struct Bad {
    int in_off, out_off, bytes;
    const char* what;
  } bad[] = {{2, 0, 16, "load"}, {0, 1, 16, "store"}, {1, 0, 8, "load"}, {0, 3, 8, "store"}};
  for (const Bad& b : bad) {
    const std::string f = fault_of([&] {
      if (b.bytes == 16)
        HY4_LAUNCH(vector_copy_kernel<hy4::dev::F32x4>, dim3(1), dim3(64), s.get(), din.get(), b.in_off, dout.get(), b.out_off);
      else
        HY4_LAUNCH(vector_copy_kernel<hy4::dev::F32x2>, dim3(1), dim3(64), s.get(), din.get(), b.in_off, dout.get(), b.out_off);
    });
    EXPECT_NE(f.find(std::to_string(b.bytes) + "-byte vector " + b.what), std::string::npos) << f;
    EXPECT_NE(f.find("is not aligned to " + std::to_string(b.bytes) + " bytes"), std::string::npos) << f;
    EXPECT_NE(f.find("vector_copy_kernel"), std::string::npos) << "the fault names the kernel: " << f;
  }
}

// A case's launches are scheduled from its own key (the harness passes the case's seed),
// whatever ran before: the thread order inside every block comes back when the case runs
// again, so a race a case file caught replays exactly; another key, another order.
TEST_P(Executor, ACaseScheduleReplaysTheSameThreadOrder) {
  const int blocks = 8, threads = 128;
  ScopedStream s;
  auto run_case = [&](uint64_t key, int launches_before) {
    DeviceBuffer<int> counters(blocks), out(blocks * threads);
    for (int i = 0; i < launches_before; ++i)  // unrelated launches move the process's counter
      HY4_LAUNCH(thread_order_kernel, dim3(blocks), dim3(threads), s.get(), counters.get(), out.get());
    counters.upload(std::vector<int>(blocks, 0), s);
    hy4::rt::begin_case_schedule(key);
    HY4_LAUNCH(thread_order_kernel, dim3(blocks), dim3(threads), s.get(), counters.get(), out.get());
    std::vector<int> o;
    out.download(o, s);
    hy4::rt::synchronize(s);
    return o;
  };
  const std::vector<int> a = run_case(42, 0), again = run_case(42, 3), other = run_case(43, 0);
  std::vector<int> launch_order(threads);
  for (int i = 0; i < threads; ++i) launch_order[i] = i;
  EXPECT_NE(std::vector<int>(a.begin(), a.begin() + threads), launch_order) << "threads ran in index order";
  EXPECT_EQ(a, again) << "the same case key after other launches gave another thread order";
  EXPECT_NE(a, other) << "another case key gave the same thread order in every block";
}

// A failing case's file carries the scheduling seed and the warp size, and replaying a
// file runs under the file's seed for that replay only.  A second case saved under the
// same name (two tests failing with one seed; warp 32 and 64 in parallel) gets a name of
// its own; the same case saved again keeps its file.
TEST_P(Executor, CaseFilesCarryTheSchedulingSeedAndNeverOverwriteEachOther) {
  const std::string dir = ::testing::TempDir() + "hy4-sched-seed-warp" + std::to_string(GetParam());
  for (const char* name : {"/sched_seed_probe.case", "/sched_seed_probe.2.case"}) std::remove((dir + name).c_str());
  const uint64_t seed = hy4::rt::schedule_seed();
  hy4::harness::CaseFile c;
  c.op = "gate";
  c.ints = {{"seed", 5}, {"T", 2}, {"W", 24}};
  std::string path, again, other;
  {
    const ScopedEnv case_dir("HY4_CASE_DIR", dir);
    path = hy4::harness::save_failed_case(c, "sched_seed_probe");
    again = hy4::harness::save_failed_case(c, "sched_seed_probe");
    hy4::harness::CaseFile other_case = c;
    other_case.ints["T"] = 3;
    other = hy4::harness::save_failed_case(other_case, "sched_seed_probe");
  }
  ASSERT_FALSE(path.empty());
  EXPECT_EQ(again, path) << "the same case saved twice";
  EXPECT_EQ(other, dir + "/sched_seed_probe.2.case") << "another case under the same name";
  EXPECT_EQ(hy4::harness::CaseFile::read(path).get("T"), 2) << "the second case overwrote the first";
  EXPECT_EQ(hy4::harness::CaseFile::read(other).get("T"), 3);
  hy4::harness::CaseFile back = hy4::harness::CaseFile::read(path);
  ASSERT_EQ(back.ints.count("sched_seed"), 1u) << path;
  EXPECT_EQ(static_cast<uint64_t>(back.ints.at("sched_seed")), seed);
  EXPECT_EQ(back.get_or("cpu_warp", 0), GetParam());
  const hy4::harness::CaseFile expanded = hy4::harness::expand_case(back);  // hy4-repro --expand keeps both
  EXPECT_EQ(expanded.get_or("sched_seed", -1), back.get("sched_seed"));
  EXPECT_EQ(expanded.get_or("cpu_warp", 0), GetParam());
  back.ints["sched_seed"] = 12345;
  ScopedStream s;
  EXPECT_TRUE(hy4::harness::replay_case(back, s.get(), false).ok());
  EXPECT_EQ(hy4::rt::schedule_seed(), seed) << "replay_case left the file's scheduling seed behind";
}

// Blocks run in an order that is not the launch order, and the order follows the
// scheduling seed: a kernel that depends on block order (block b reading what block
// b-1 wrote, a "last block" that assumes the others finished) is caught.
TEST_P(Executor, BlockOrderDiffersFromLaunchOrderAndFollowsTheSchedulingSeed) {
  const int blocks = 512;
  auto run_order = [&](unsigned long long seed) {
    hy4::cpu::set_sched_seed(seed);
    DeviceBuffer<int> counter(1), order(blocks);
    ScopedStream s;
    std::vector<int> zero(1, 0);
    counter.upload(zero, s);
    HY4_LAUNCH(block_order_kernel, dim3(blocks), dim3(64), s.get(), counter.get(), order.get());
    std::vector<int> o;
    order.download(o, s);
    hy4::rt::synchronize(s);
    return o;
  };
  const unsigned long long saved = hy4::cpu::sched_seed();
  const std::vector<int> a = run_order(1), b = run_order(2);
  hy4::cpu::set_sched_seed(saved);
  std::vector<int> launch(blocks), reversed(blocks);
  for (int i = 0; i < blocks; ++i) launch[i] = i, reversed[i] = blocks - 1 - i;
  std::vector<int> sorted_a = a;
  std::sort(sorted_a.begin(), sorted_a.end());
  EXPECT_EQ(sorted_a, launch) << "every block ran exactly once";
  EXPECT_NE(a, launch) << "blocks ran in launch order";
  EXPECT_NE(a, reversed) << "blocks ran in reverse launch order";
  EXPECT_NE(a, b) << "the block order did not change with the scheduling seed";
  // The first blocks to run are spread over the grid, not a prefix of it.
  int late_in_first_16 = 0;
  for (int i = 0; i < 16; ++i) late_in_first_16 += a[i] >= blocks / 2;
  EXPECT_GT(late_in_first_16, 0) << "the first 16 blocks to run were all from the first half of the grid";
}

INSTANTIATE_TEST_SUITE_P(Warp, Executor, ::testing::Values(32, 64),
                         [](const ::testing::TestParamInfo<int>& i) { return "warp" + std::to_string(i.param); });

// A dependent launch (HY4_LAUNCH_DEPENDENT_IF; CUDA: programmatic dependent launch) may
// start before its primary ends.  The CPU runtime holds the primary back until the first
// block of the dependent has every thread at dev::wait_prior_grid(): a read placed before
// the wait sees the stream as it was before the primary (as a GPU may let it), one after it
// sees the primary's writes; a thread that never waits is a fault.  Eager and in a graph
// replayed with changed data.
class DependentLaunch : public Executor {
 protected:
  static constexpr int kBlocks = 48, kThreads = 64, kN = kBlocks * kThreads;
  // Eager: in = 42, mid = 7 before the pair; in a graph, replay r runs with in = 100 + r
  // (mid = 7 again before each).
  std::vector<int> run_pair(ScopedStream& s, DeviceBuffer<int>& in, DeviceBuffer<int>& mid, DeviceBuffer<int>& out,
                            bool read_before_wait, bool graph, int replays = 1) {
    std::vector<int> got;
    in.upload(std::vector<int>{42}, s);
    mid.upload(std::vector<int>(kN, 7), s);
    auto launch_pair = [&] {
      HY4_LAUNCH_PRIMARY_IF(true, primary_fill_kernel, dim3(kBlocks), dim3(kThreads), s.get(), in.get(), mid.get());
      HY4_LAUNCH_DEPENDENT_IF(true, dependent_copy_kernel, dim3(kBlocks), dim3(kThreads), s.get(), mid.get(),
                              out.get(), read_before_wait, true);
    };
    if (!graph) {
      launch_pair();
    } else {
      hy4::rt::begin_capture(s.get());
      launch_pair();
      hy4::rt::GraphExec g = hy4::rt::end_capture(s.get());
      for (int r = 0; r < replays; ++r) {
        in.upload(std::vector<int>{100 + r}, s);  // changed data between replays
        mid.upload(std::vector<int>(kN, 7), s);
        hy4::rt::replay(g, s.get());
      }
      hy4::rt::destroy_graph(g);
    }
    out.download(got, s);
    hy4::rt::synchronize(s.get());
    return got;
  }
};

TEST_P(DependentLaunch, AReadAfterTheWaitSeesThePrimarysWrites) {
  for (bool graph : {false, true}) {
    ScopedStream s;
    DeviceBuffer<int> in(1), mid(kN), out(kN);
    const std::vector<int> got = run_pair(s, in, mid, out, false, graph, 3);
    const int want = graph ? 102 : 42;  // the last replay's data
    for (int i = 0; i < kN; ++i) ASSERT_EQ(got[i], want) << (graph ? "graph, " : "eager, ") << "element " << i;
  }
}

TEST_P(DependentLaunch, AReadBeforeTheWaitSeesTheStreamBeforeThePrimary) {
  for (bool graph : {false, true}) {
    ScopedStream s;
    DeviceBuffer<int> in(1), mid(kN), out(kN);
    const std::vector<int> got = run_pair(s, in, mid, out, true, graph, 2);
    // The first block to wait read before the primary ran (all of its threads did).
    const int early = static_cast<int>(std::count(got.begin(), got.end(), 7));
    EXPECT_GE(early, kThreads) << (graph ? "graph" : "eager")
                               << ": no block read before the primary ran: a misplaced wait would pass";
    std::vector<int> check;
    mid.download(check, s);
    hy4::rt::synchronize(s.get());
    EXPECT_EQ(check, std::vector<int>(kN, graph ? 101 : 42)) << "the primary ran, after the early reads";
  }
}

TEST_P(DependentLaunch, AThreadThatNeverWaitsIsAFault) {
  ScopedStream s;
  DeviceBuffer<int> in(1), mid(kN), out(kN);
  in.upload(std::vector<int>{42}, s);
  HY4_LAUNCH_PRIMARY_IF(true, primary_fill_kernel, dim3(kBlocks), dim3(kThreads), s.get(), in.get(), mid.get());
  const std::string f = fault_of([&] {
    HY4_LAUNCH_DEPENDENT_IF(true, dependent_copy_kernel, dim3(kBlocks), dim3(kThreads), s.get(), mid.get(), out.get(),
                            false, false);
  });
  EXPECT_NE(f.find("ended without dev::wait_prior_grid()"), std::string::npos) << f;
  EXPECT_NE(f.find("dependent_copy_kernel"), std::string::npos) << f;
  std::vector<int> check;
  mid.download(check, s);
  hy4::rt::synchronize(s.get());
  EXPECT_EQ(check, std::vector<int>(kN, 42)) << "the held-back primary ran anyway";
  // Not a dependent launch: no wait needed, nothing held back.
  EXPECT_EQ(fault_of([&] {
              HY4_LAUNCH_PRIMARY_IF(false, primary_fill_kernel, dim3(kBlocks), dim3(kThreads), s.get(), in.get(), mid.get());
              HY4_LAUNCH_DEPENDENT_IF(false, dependent_copy_kernel, dim3(kBlocks), dim3(kThreads), s.get(), mid.get(),
                                      out.get(), true, false);
            }),
            "");
  std::vector<int> plain;
  out.download(plain, s);
  hy4::rt::synchronize(s.get());
  EXPECT_EQ(plain, std::vector<int>(kN, 42)) << "plain launches run in order";
}

TEST_P(DependentLaunch, AHeldPrimaryRunsBeforeAnyOtherWorkOnTheStream) {
  ScopedStream s;
  DeviceBuffer<int> in(1), mid(kN), out(kN);
  in.upload(std::vector<int>{5}, s);
  mid.upload(std::vector<int>(kN, 7), s);
  HY4_LAUNCH_PRIMARY_IF(true, primary_fill_kernel, dim3(kBlocks), dim3(kThreads), s.get(), in.get(), mid.get());
  std::vector<int> got;
  mid.download(got, s);  // a copy after the primary
  EXPECT_EQ(got, std::vector<int>(kN, 5));
  in.upload(std::vector<int>{6}, s);
  HY4_LAUNCH_PRIMARY_IF(true, primary_fill_kernel, dim3(kBlocks), dim3(kThreads), s.get(), in.get(), mid.get());
  HY4_LAUNCH(dependent_copy_kernel, dim3(kBlocks), dim3(kThreads), s.get(), mid.get(), out.get(), true, false);
  out.download(got, s);  // a plain launch after the primary
  EXPECT_EQ(got, std::vector<int>(kN, 6));
  // A dependent with no primary held back (a plain launch before it): its waits return.
  HY4_LAUNCH_DEPENDENT_IF(true, dependent_barrier_kernel, dim3(kBlocks), dim3(kThreads), s.get(), mid.get(), out.get());
  out.download(got, s);
  EXPECT_EQ(got, std::vector<int>(kN, 6));
  // Waits on both sides of a barrier and a warp collective, with the primary held back.
  in.upload(std::vector<int>{9}, s);
  HY4_LAUNCH_PRIMARY_IF(true, primary_fill_kernel, dim3(kBlocks), dim3(kThreads), s.get(), in.get(), mid.get());
  HY4_LAUNCH_DEPENDENT_IF(true, dependent_barrier_kernel, dim3(kBlocks), dim3(kThreads), s.get(), mid.get(), out.get());
  out.download(got, s);
  hy4::rt::synchronize(s.get());
  EXPECT_EQ(got, std::vector<int>(kN, 9));
}

// A held-back primary runs on a helper thread that outlives the run (one per nesting
// depth, shared by every held primary of the process): its worker keeps its fiber stacks
// and, under ASan, their fake stacks.  A thread per run freed its stacks at its end but
// leaked their fake stacks (2.8 MiB mapped per fiber; the routing fuzzer, whose sort kernel
// is a dependent launch, reached libFuzzer's 4 GiB RSS limit after ~500 inputs of a grown
// corpus).
TEST_P(DependentLaunch, HeldPrimariesRunOnOneLastingHelperThread) {
  ScopedStream s;
  DeviceBuffer<int> in(1), mid(kN), out(kN);
  const long main_thread = static_cast<long>(::gettid());
  std::vector<long> ran_on;
  for (int run = 0; run < 3; ++run) {
    g_primary_thread.store(0);
    in.upload(std::vector<int>{20 + run}, s);
    HY4_LAUNCH_PRIMARY_IF(true, primary_thread_kernel, dim3(kBlocks), dim3(kThreads), s.get(), in.get(), mid.get());
    HY4_LAUNCH_DEPENDENT_IF(true, dependent_copy_kernel, dim3(kBlocks), dim3(kThreads), s.get(), mid.get(), out.get(),
                            false, true);
    std::vector<int> got;
    out.download(got, s);
    hy4::rt::synchronize(s.get());
    ASSERT_EQ(got, std::vector<int>(kN, 20 + run)) << "run " << run;
    ran_on.push_back(g_primary_thread.load());
  }
  EXPECT_NE(ran_on[0], 0) << "the primary never ran";
  EXPECT_NE(ran_on[0], main_thread) << "the primary was not held back (it ran on the launching thread)";
  EXPECT_EQ(ran_on[1], ran_on[0]) << "the second held primary ran on a new thread";
  EXPECT_EQ(ran_on[2], ran_on[0]) << "the third held primary ran on a new thread";
}

// A forked child (gtest's default "fast" death tests, a harness that forks per case) has
// none of its parent's threads: it gets a block pool, a watchdog and held-primary helpers
// of its own.  The parent's pool and helpers would never answer (the alarm turns that wait
// into a failure), and without a watchdog of its own a child's endless kernel hangs.
TEST_P(DependentLaunch, AForkedChildRunsOnThreadsOfItsOwn) {
  ScopedStream s;
  DeviceBuffer<int> in(1), mid(kN), out(kN);
  ASSERT_EQ(run_pair(s, in, mid, out, false, false), std::vector<int>(kN, 42));  // the parent's helper exists now
  const std::string style = GTEST_FLAG_GET(death_test_style);
  GTEST_FLAG_SET(death_test_style, "fast");  // fork, no exec: the child starts with the parent's memory
  auto child = [&] {
    ::alarm(20);
    ScopedStream cs;
    DeviceBuffer<int> cin(1), cmid(kN), cout(kN);
    std::_Exit(run_pair(cs, cin, cmid, cout, false, false) == std::vector<int>(kN, 42) ? 0 : 1);
  };
  EXPECT_EXIT(child(), ::testing::ExitedWithCode(0), "");
  {
    const ScopedEnv limit("HY4_CPU_BLOCK_TIMEOUT_S", "1");
    DeviceBuffer<int> d(256);
    auto endless = [&] {
      ::alarm(20);
      HY4_LAUNCH(endless_thread_kernel, dim3(3), dim3(64), s.get(), d.get(), 0);
    };
    EXPECT_DEATH(endless(), "kernel endless_thread_kernel .*: a block still runs after 1 s");
  }
  GTEST_FLAG_SET(death_test_style, style);
}

// A held-back primary that never ends: the watchdog names the primary, not the dependent
// whose threads wait for it (the primary runs on a helper thread inside the dependent's
// launch, so its blocks are not the watched grid's).
TEST_P(DependentLaunch, AHangInTheHeldPrimaryNamesThePrimary) {
  const ScopedEnv limit("HY4_CPU_BLOCK_TIMEOUT_S", "1");
  ScopedStream s;
  DeviceBuffer<int> d(256), mid(kN), out(kN);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        HY4_LAUNCH_PRIMARY_IF(true, endless_thread_kernel, dim3(3), dim3(64), s.get(), d.get(), 0);
        HY4_LAUNCH_DEPENDENT_IF(true, dependent_copy_kernel, dim3(kBlocks), dim3(kThreads), s.get(), mid.get(),
                                out.get(), false, true);
      },
      "kernel endless_thread_kernel \\(the held-back primary of dependent launch dependent_copy_kernel \\(grid "
      "\\(48,1,1\\), block \\(64,1,1\\), warp " + std::to_string(GetParam()) +
          "\\)\\): a block still runs after 1 s(.|\n)*block 1 \\(linear\\) of the held-back primary "
          "endless_thread_kernel running for [0-9]+ s, thread 5 \\(linear\\) last resumed");
  // The same primary ending (stride 1): the pair runs, no report.
  HY4_LAUNCH_PRIMARY_IF(true, endless_thread_kernel, dim3(3), dim3(64), s.get(), d.get(), 1);
  HY4_LAUNCH_DEPENDENT_IF(true, dependent_copy_kernel, dim3(kBlocks), dim3(kThreads), s.get(), mid.get(), out.get(),
                          false, true);
  hy4::rt::synchronize(s.get());
}

INSTANTIATE_TEST_SUITE_P(Warp, DependentLaunch, ::testing::Values(32, 64),
                         [](const ::testing::TestParamInfo<int>& i) { return "warp" + std::to_string(i.param); });

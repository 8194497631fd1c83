// simt.h: the kernel-side face of the CPU SIMT executor (HY4_BACKEND_CPU only).
//
// Every GPU thread of a block is a fiber; the block's fibers run on one OS thread,
// blocks run in a shuffled order on a pool of OS threads (a block's fibers round-robin,
// or warp by warp: its seed picks).  A fiber runs until it reaches a barrier or a warp
// collective; a barrier releases when every thread of the block stands at it, a
// collective when every lane of the warp does.  Anything else (a thread that exits
// while others wait, lanes at different collectives) is a KernelFault naming the kernel,
// block, threads and site; a block that runs past HY4_CPU_BLOCK_TIMEOUT_S (default
// 60 s; a thread that loops without end) ends the process, naming the running blocks
// and threads.  Shared memory is poisoned with garbage at each block start, and a read of an element no thread has written is
// reported.  The warp size (32 or 64) is chosen at run time (hy4::cpu::set_warp_size
// or HY4_CPU_WARP_SIZE).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../platform/runtime.h"
#include "executor_control.h"

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

#define __global__
#define __host__
#define __device__
#define __forceinline__ inline
#define __restrict__

namespace hy4::cpu {

// A kernel misbehaved in a way a GPU would leave undefined (deadlock, divergence,
// uninitialised shared read, out-of-range shared index): thrown by the launch.
struct KernelFault : hy4::rt::RuntimeError {
  using hy4::rt::RuntimeError::RuntimeError;
};

struct ThreadIndex {
  dim3 threadIdx, blockIdx, blockDim, gridDim;
};
const ThreadIndex& current_index();

int lane_id();
void sync_block();

enum class ShuffleKind { Xor, Down, Idx };
uint64_t warp_shuffle_bits(uint64_t v, ShuffleKind kind, int arg);
uint64_t warp_ballot(bool p);
// dev::wait_prior_grid(): in a dependent launch, waits for the prior grid (simt_executor.cpp).
void wait_prior_grid();
bool warp_all(bool p);
void warp_sync();

template <class T>
T warp_shuffle(T v, ShuffleKind kind, int arg) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "shuffle of up to 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  bits = warp_shuffle_bits(bits, kind, arg);
  T out;
  std::memcpy(&out, &bits, sizeof(T));
  return out;
}

// A global-memory vector access (hy4::dev::Vec, 8 or 16 bytes) at an address not
// aligned to its size: a GPU faults (or splits it); reported as a KernelFault naming
// the kernel, block and thread.  `what` is "load" or "store".
void check_vector_access(const void* addr, std::size_t bytes, const char* type, const char* what);

// ---- shared memory ------------------------------------------------------------
struct SharedSlot {
  unsigned char* data;
  unsigned char* written;  // one flag per element
};
SharedSlot shared_allocate(std::size_t count, std::size_t elem_size, const char* name);
void report_shared_uninit(const char* name, std::size_t index);
void report_shared_oob(const char* name, std::size_t index, std::size_t count);
// A per-thread scratch area of at least `bytes` bytes, suitably aligned.
unsigned char* shared_scratch(std::size_t bytes);

// The executor's own checks inlined into kernels (shared-memory bounds and written flags)
// carry no coverage counters in the fuzz build: like the executor library, their branches
// are the same for every input and would only cost time on every shared access.
#if defined(__clang__)
#define HY4_EXECUTOR_INLINE __attribute__((no_sanitize("coverage")))
#else
#define HY4_EXECUTOR_INLINE
#endif

template <class T>
struct SharedRef {
  T* p;
  unsigned char* w;
  const char* name;
  std::size_t index;
  // Reads convert implicitly to T alone (a template deduces U = the target type and
  // accepts only U = T), so a read mixes in expressions as the GPU's array element: with
  // a plain operator T(), `c ? shared[i] : 0` converted the proxy to int (a uint64_t
  // mask cut to 32 bits here, not on a GPU); now the built-in (T, int) conditional
  // applies and the result is T's arithmetic type.  Casts to other arithmetic types
  // stay allowed (explicit); an implicit one (shared float into a double) does not
  // compile here, where a GPU would convert: write the cast.
  template <class U, std::enable_if_t<std::is_same_v<U, T>, int> = 0>
  HY4_EXECUTOR_INLINE operator U() const {
    if (!*w) report_shared_uninit(name, index);
    return *p;
  }
  template <class U, std::enable_if_t<!std::is_same_v<U, T> && std::is_arithmetic_v<U>, int> = 0>
  HY4_EXECUTOR_INLINE explicit operator U() const {
    return static_cast<U>(static_cast<T>(*this));
  }
  HY4_EXECUTOR_INLINE SharedRef& operator=(const T& v) {
    *p = v;
    *w = 1;
    return *this;
  }
  SharedRef& operator=(const SharedRef& o) { return *this = static_cast<T>(o); }
  SharedRef& operator+=(const T& v) { return *this = static_cast<T>(*this) + v; }
};

template <class T>
struct SharedArray {
  T* data;
  unsigned char* written;
  std::size_t count;
  const char* name;
  HY4_EXECUTOR_INLINE SharedRef<T> operator[](std::size_t i) const {
    if (i >= count) {  // reported; the access goes to a per-thread scratch slot instead
      report_shared_oob(name, i, count);
      unsigned char* scratch = shared_scratch(sizeof(T) + 1);
      return SharedRef<T>{reinterpret_cast<T*>(scratch), scratch + sizeof(T), name, i};
    }
    return SharedRef<T>{data + i, written + i, name, i};
  }
};

template <class T>
SharedArray<T> shared_array(std::size_t count, const char* name) {
  static_assert(std::is_trivially_copyable_v<T>, "shared arrays hold trivially copyable types");
  SharedSlot s = shared_allocate(count, sizeof(T), name);
  return SharedArray<T>{reinterpret_cast<T*>(s.data), s.written, count, name};
}
// A shared array declared [max] on a GPU of which the kernel uses count: the CPU holds
// count elements (index count and past are reported); count > max is a fault (the GPU
// array would overflow).
void report_shared_overdeclared(const char* name, std::size_t count, std::size_t max);
template <class T>
SharedArray<T> shared_array_upto(std::size_t max, std::size_t count, const char* name) {
  if (count > max) report_shared_overdeclared(name, count, max);
  return shared_array<T>(count < max ? count : max, name);
}

// ---- launches -------------------------------------------------------------------
// How a launch stands to its neighbours in the stream (HY4_LAUNCH_PRIMARY_IF /
// HY4_LAUNCH_DEPENDENT_IF; on CUDA a programmatic dependent launch):
//  Normal     runs after everything before it.
//  Primary    its dependent (the next launch) may start before it ends.  The CPU runtime
//             holds it back until then: any other work on the stream (a copy, a normal
//             launch, a synchronize, the end of a replay) runs it first.
//  Dependent  may start before the launch before it ends; each of its threads calls
//             dev::wait_prior_grid() before it reads what that launch writes (and before
//             it ends).  The held-back primary runs when the first block that gets there
//             has every thread at its wait (simt_executor.cpp), so what a thread reads
//             before its wait is what the stream held before the primary ran.
enum class LaunchOrder { Normal, Primary, Dependent };

// Runs body once per thread of grid x block on the stream (or records it into the
// stream's capture).  Arguments were already copied by value into body.
void submit_launch(const char* name, dim3 grid, dim3 block, hy4::rt::Stream stream, std::function<void()> body,
                   LaunchOrder order = LaunchOrder::Normal);

template <class... P, class... A>
void launch_ordered(LaunchOrder order, const char* name, void (*kernel)(P...), dim3 grid, dim3 block,
                    hy4::rt::Stream stream, A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "kernel argument count");
  // Arguments are converted to the kernel's parameter types and frozen by value now,
  // as a GPU launch (and a captured graph node) freezes them.
  auto frozen = std::tuple<std::decay_t<P>...>(static_cast<std::decay_t<P>>(std::forward<A>(args))...);
  submit_launch(name, grid, block, stream, [kernel, frozen]() { std::apply(kernel, frozen); }, order);
}
template <class... P, class... A>
void launch(const char* name, void (*kernel)(P...), dim3 grid, dim3 block, hy4::rt::Stream stream, A&&... args) {
  launch_ordered(LaunchOrder::Normal, name, kernel, grid, block, stream, std::forward<A>(args)...);
}

}  // namespace hy4::cpu

#define threadIdx (::hy4::cpu::current_index().threadIdx)
#define blockIdx (::hy4::cpu::current_index().blockIdx)
#define blockDim (::hy4::cpu::current_index().blockDim)
#define gridDim (::hy4::cpu::current_index().gridDim)
#define __syncthreads() ::hy4::cpu::sync_block()

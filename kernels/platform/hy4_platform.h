// hy4_platform.h: the one thin header that hides the platform from the kernels.
//
// A kernel source (kernels/<op>.hip) includes only this header and reads like plain
// HIP.  Exactly one backend macro is set by the build:
//   HY4_BACKEND_HIP   clang -x hip / hipcc, AMD gfx942 / gfx950 (wave64)
//   HY4_BACKEND_CUDA  nvcc, sm_90 (warp32)
//   HY4_BACKEND_CPU   the project's CPU SIMT executor (kernels/cpu), warp 32 or 64 at run time
//
// What differs between the platforms is collected here and nowhere else:
//   HY4_HD / HY4_DEVICE         host+device and device-only function markers
//   HY4_SHARED(T, name, N)      a block-shared array (CPU: checked, poisoned)
//   HY4_SHARED_UPTO(T, name, N, n)  the same, N elements on a GPU, of which the kernel
//                               uses n <= N (CPU: exactly n, so index n is out of bounds)
//   HY4_LAUNCH_BOUNDS(threads)  __launch_bounds__ on GPUs
//   HY4_LAUNCH_BOUNDS_ONE_BLOCK(threads)  the same for a kernel whose grid puts one block on
//                               an SM: CUDA __launch_bounds__(threads, 1), so ptxas may give
//                               a thread 65536 / threads registers (with threads alone it
//                               may stop at 64 and spill); HIP and the CPU as above
//   HY4_UNROLL_OVER_WARP        #pragma unroll for a loop over shuffle strides (GPUs; the CPU's
//                               warp size is a run-time value, so nothing there)
//   hy4::dev::sync_block()      __syncthreads
//   hy4::dev::sync_warp()       __syncwarp (shared-memory writes of the warp seen by all its lanes)
//   hy4::dev::shfl_xor/down/idx, ballot, any, all, lane_id, warp_size
//   hy4::dev::lowest_lane(mask)  index of the lowest set bit of a ballot mask (mask != 0)
//   hy4::dev::match_by_ballots(v, bits) the lanes whose v equals mine (v < 2^bits): one
//                               ballot per bit
//   hy4::dev::match_any(v, bits) the same: CUDA's __match_any_sync; elsewhere the ballots
//   HY4_LAUNCH(kernel, grid, block, stream, args...)
//   HY4_LAUNCH_PRIMARY_IF(p, kernel, ...) / HY4_LAUNCH_DEPENDENT_IF(d, kernel, ...)
//                               a pair of launches whose second may start before the first
//                               ends (CUDA sm_90: a programmatic dependent launch; HIP: plain
//                               launches, in order; the CPU: the primary is held back until
//                               the dependent's threads wait for it).  With p / d false, HY4_LAUNCH.
//   hy4::dev::shared_or(arr, i, v)   arr[i] |= v on a shared array as one atomic read-modify-
//                               write (GPUs: atomicOr; the CPU: a fiber runs to its next
//                               collective, so the plain or is already atomic)
//   hy4::dev::launch_dependents()  in a primary: the dependent may start now
//   hy4::dev::wait_prior_grid()    in a dependent: waits until the primary has ended and its
//                               writes are seen; every thread calls it, before reading what
//                               the primary writes (no-op in a launch that is not dependent)
//   hy4::dev::Vec<T, N>         8- and 16-byte vector types for global loads/stores
//                               (CPU: every access through one is checked for alignment)
// Warp collectives are full-warp only (every lane of the warp takes part); the CPU
// executor reports any collective that not every lane reaches.
#pragma once

#include <cstdint>

#include "runtime.h"

#if defined(HY4_BACKEND_CPU)
#include "../cpu/simt.h"
#include "hy4_numeric.h"  // fast_sigmoid's CPU model
#define HY4_HD
#define HY4_DEVICE
#elif defined(HY4_BACKEND_HIP)
#include <hip/hip_runtime.h>
#define HY4_HD __host__ __device__
#define HY4_DEVICE __device__
#elif defined(HY4_BACKEND_CUDA)
#include <cuda_runtime.h>
#define HY4_HD __host__ __device__
#define HY4_DEVICE __device__
#else
#error "hy4_platform.h: define one of HY4_BACKEND_CPU, HY4_BACKEND_HIP, HY4_BACKEND_CUDA"
#endif

// The most threads a kernel is launched with (lets the compiler use more registers).
#if defined(HY4_BACKEND_CPU)
#define HY4_LAUNCH_BOUNDS(threads)
#else
#define HY4_LAUNCH_BOUNDS(threads) __launch_bounds__(threads)
#endif
#if defined(HY4_BACKEND_CPU)
#define HY4_LAUNCH_BOUNDS_ONE_BLOCK(threads)
#elif defined(HY4_BACKEND_CUDA)
#define HY4_LAUNCH_BOUNDS_ONE_BLOCK(threads) __launch_bounds__(threads, 1)
#else
#define HY4_LAUNCH_BOUNDS_ONE_BLOCK(threads) __launch_bounds__(threads)
#endif

// `#pragma unroll` for a loop whose trip count follows from the warp size (shuffle strides
// ws / 2 .. 1): a GPU compiler knows the warp size and unrolls it; the CPU executor's warp
// size is a run-time value (32 or 64), so there the pragma could only warn "loop not
// unrolled" and is left out.
#if defined(HY4_BACKEND_CPU)
#define HY4_UNROLL_OVER_WARP
#else
#define HY4_UNROLL_OVER_WARP _Pragma("unroll")
#endif

#if defined(HY4_BACKEND_CPU)
#define HY4_SHARED(T, name, N) ::hy4::cpu::SharedArray<T> name = ::hy4::cpu::shared_array<T>((N), #name)
#define HY4_SHARED_UPTO(T, name, N, n) \
  ::hy4::cpu::SharedArray<T> name = ::hy4::cpu::shared_array_upto<T>((N), (n), #name)
#else
#define HY4_SHARED(T, name, N) __shared__ T name[(N)]
#define HY4_SHARED_UPTO(T, name, N, n) __shared__ T name[(N)]
#endif

namespace hy4::dev {

#if defined(HY4_BACKEND_CPU)
inline void sync_block() { ::hy4::cpu::sync_block(); }
inline int warp_size() { return ::hy4::cpu::warp_size(); }
inline int lane_id() { return ::hy4::cpu::lane_id(); }
template <class T> inline T shfl_xor(T v, int mask) { return ::hy4::cpu::warp_shuffle(v, ::hy4::cpu::ShuffleKind::Xor, mask); }
template <class T> inline T shfl_down(T v, int delta) { return ::hy4::cpu::warp_shuffle(v, ::hy4::cpu::ShuffleKind::Down, delta); }
template <class T> inline T shfl_idx(T v, int src) { return ::hy4::cpu::warp_shuffle(v, ::hy4::cpu::ShuffleKind::Idx, src); }
inline uint64_t ballot(bool p) { return ::hy4::cpu::warp_ballot(p); }
inline bool any(bool p) { return ::hy4::cpu::warp_ballot(p) != 0; }
inline bool all(bool p) { return ::hy4::cpu::warp_all(p); }
inline void sync_warp() { ::hy4::cpu::warp_sync(); }
inline int lowest_lane(uint64_t m) { return __builtin_ctzll(m); }
inline void launch_dependents() {}  // the CPU runtime holds the primary back instead
template <class T>
inline void shared_or(::hy4::cpu::SharedArray<T> arr, int i, T v) { arr[i] = static_cast<T>(arr[i]) | v; }
inline void wait_prior_grid() { ::hy4::cpu::wait_prior_grid(); }
#elif defined(HY4_BACKEND_HIP)
// Debian's HIP 5.2 __syncthreads calls __work_group_barrier, which needs the OpenCL
// __atomic_work_item_fence that clang 22's device libs no longer provide (link error,
// and the call alone cost 80 bytes of scratch).  The same barrier from the builtins:
// release fence, s_barrier, acquire fence, at workgroup scope.
__device__ __forceinline__ void sync_block() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
__device__ __forceinline__ int warp_size() { return warpSize; }
__device__ __forceinline__ int lane_id() { return static_cast<int>(threadIdx.x) & (warpSize - 1); }
template <class T> __device__ __forceinline__ T shfl_xor(T v, int mask) { return __shfl_xor(v, mask); }
template <class T> __device__ __forceinline__ T shfl_down(T v, int delta) { return __shfl_down(v, delta); }
template <class T> __device__ __forceinline__ T shfl_idx(T v, int src) { return __shfl(v, src); }
__device__ __forceinline__ uint64_t ballot(bool p) { return static_cast<uint64_t>(__ballot(p)); }
__device__ __forceinline__ bool any(bool p) { return __any(p); }
__device__ __forceinline__ bool all(bool p) { return __all(p); }
// A wave runs in lockstep; what is needed is that the compiler keeps LDS accesses in
// order around this point and that they complete (wavefront-scope fence).
__device__ __forceinline__ int lowest_lane(uint64_t m) { return __builtin_ctzll(m); }
template <class T>
__device__ __forceinline__ void shared_or(T* arr, int i, T v) { atomicOr(arr + i, v); }
// HIP has no dependent launch: the pair's launches run in stream order.
__device__ __forceinline__ void launch_dependents() {}
__device__ __forceinline__ void wait_prior_grid() {}
__device__ __forceinline__ void sync_warp() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}
#else  // CUDA
constexpr unsigned kFullMask = 0xffffffffu;
__device__ __forceinline__ void sync_block() { __syncthreads(); }
// A compile-time 32 (CUDA's warpSize is a register read: loops over it would not
// unroll and `x % warpSize` would be a division).
__device__ __forceinline__ constexpr int warp_size() { return 32; }
__device__ __forceinline__ int lane_id() { return static_cast<int>(threadIdx.x) & 31; }
template <class T> __device__ __forceinline__ T shfl_xor(T v, int mask) { return __shfl_xor_sync(kFullMask, v, mask); }
template <class T> __device__ __forceinline__ T shfl_down(T v, int delta) { return __shfl_down_sync(kFullMask, v, delta); }
template <class T> __device__ __forceinline__ T shfl_idx(T v, int src) { return __shfl_sync(kFullMask, v, src); }
__device__ __forceinline__ uint64_t ballot(bool p) { return static_cast<uint64_t>(__ballot_sync(kFullMask, p)); }
__device__ __forceinline__ bool any(bool p) { return __any_sync(kFullMask, p) != 0; }
__device__ __forceinline__ bool all(bool p) { return __all_sync(kFullMask, p) != 0; }
__device__ __forceinline__ void sync_warp() { __syncwarp(kFullMask); }
__device__ __forceinline__ int lowest_lane(uint64_t m) { return __ffsll(static_cast<long long>(m)) - 1; }
template <class T>
__device__ __forceinline__ void shared_or(T* arr, int i, T v) { atomicOr(arr + i, v); }
// PTX griddepcontrol (sm_90): both are no-ops in a launch without the PDL attribute.
__device__ __forceinline__ void launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void wait_prior_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
#endif

// The lanes of the warp whose v equals mine; v < 2^bits, bits warp-uniform.  One ballot
// per bit: a lane keeps the lanes that agree with it on every bit.
HY4_DEVICE inline uint64_t match_by_ballots(uint32_t v, int bits) {
  const int ws = warp_size();
  uint64_t m = ws == 64 ? ~uint64_t{0} : (uint64_t{1} << ws) - 1;
  for (int b = 0; b < bits; ++b) {
    const bool bit = ((v >> b) & 1u) != 0;
    const uint64_t on = ballot(bit);
    m &= bit ? on : ~on;
  }
  return m;
}
// The same; CUDA: one MATCH.ANY, whose time grows with the distinct values in the warp
// (H100, routing: slower than 9 ballots with up to 32 distinct values, faster with few).
#if defined(HY4_BACKEND_CUDA)
HY4_DEVICE inline uint64_t match_any(uint32_t v, int bits) {
  (void)bits;
  return static_cast<uint64_t>(__match_any_sync(kFullMask, v));
}
#else
HY4_DEVICE inline uint64_t match_any(uint32_t v, int bits) { return match_by_ballots(v, bits); }
#endif

// ---- approximate sigmoid (a filter's estimate only, never an output) -------------
// fast_sigmoid(x) ~ 1 / (1 + e^-x) by the hardware's approximate exp and divide.
// Promise (what topk's filter margin rests on): |fast_sigmoid(x) - sigmoid_f32(x)| <=
// 2^-16 for every x, NaN for NaN.  CUDA: __expf is within 2 + floor(|1.173 x|) ulp (CUDA C
// Programming Guide, intrinsic functions: <= 124 ulp = 1.5e-5 relative while |x| <= 104;
// past that both sigmoids are 0 or 1) and __fdividef within 2 ulp, so the difference is
// below 5e-6; HIP's __expf (v_exp_f32 of x * log2 e) is within ~|x| 2^-24 relative.
// The CPU executor is the worst GPU the promise allows: sigmoid_f32(x) moved by a
// deterministic pseudo-random amount of up to 2^-16, so that a filter relying on less
// than the promise fails on the CPU too (the property tests' ties see it).
#if defined(HY4_BACKEND_CPU)
inline float fast_sigmoid(float x) {
  uint32_t h = f32_bits(x);
  h ^= h >> 16;
  h *= 0x7feb352du;
  h ^= h >> 15;
  h *= 0x846ca68bu;
  h ^= h >> 16;
  const float u = static_cast<float>(static_cast<int32_t>(h >> 8) - (1 << 23)) * 0x1p-23f;  // [-1, 1)
  return sigmoid_f32(x) + u * 0x1p-16f;
}
#elif defined(HY4_BACKEND_CUDA)
// ex2.approx.ftz and rcp.approx.ftz (PTX ISA: relative errors about 2^-22 and 2^-23):
// what __expf / __fdividef compile to, without their subnormal fix-ups (a subnormal
// input or e^-x leaves s at 0.5 or 1 anyway).  The rounding of -x log2 e moves e^-x by
// |x| 2^-24 relative, so |error| <= (|x| 2^-24 + 2^-21) s, below 2^-16 for |x| <= 100;
// past that both sigmoids are within 2^-24 of 0 or 1.  The device_bits test holds it to
// the promise over all 2^32 inputs on the GPU.  (H200, topk T = 8192: 10.87 -> 10.51 us.)
__device__ __forceinline__ float fast_sigmoid(float x) {
  float e, r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(x * -1.44269504f));
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(1.0f + e));
  return r;
}
#else
__device__ __forceinline__ float fast_sigmoid(float x) { return __fdividef(1.0f, 1.0f + __expf(-x)); }
#endif

// ---- vector types for global memory --------------------------------------------
// Kernels load and store 8- and 16-byte vectors only through these (reinterpret a
// global pointer as Vec<T, N>* and copy).  A GPU needs the address aligned to the
// vector's size; on the CPU executor every copy from or to a Vec in memory checks it
// and reports a misaligned one as a fault of the launch, naming the kernel.
template <class T, int N>
struct alignas(sizeof(T) * N) Vec {
  static_assert(sizeof(T) * N == 8 || sizeof(T) * N == 16, "vector accesses are 8 or 16 bytes");
  T v[N];
#if defined(HY4_BACKEND_CPU)
  Vec() = default;
  Vec(const Vec& o) {
    ::hy4::cpu::check_vector_access(&o, sizeof(Vec), "Vec", "load");
    copy_bytes(this, &o);
  }
  Vec& operator=(const Vec& o) {
    ::hy4::cpu::check_vector_access(this, sizeof(Vec), "Vec", "store");
    ::hy4::cpu::check_vector_access(&o, sizeof(Vec), "Vec", "load");
    copy_bytes(this, &o);
    return *this;
  }
  // After a reported misaligned access the launch goes on (it fails at its end): copy
  // through pointers whose alignment the compiler no longer knows, so that the host
  // does not fault on an aligned SSE move first.
  static void copy_bytes(void* dst, const void* src) {
    __asm__("" : "+r"(dst), "+r"(src));
    __builtin_memcpy(static_cast<unsigned char*>(dst), static_cast<const unsigned char*>(src), sizeof(Vec));
  }
#endif
};
using Bf16x8 = Vec<uint16_t, 8>;
using Bf16x4 = Vec<uint16_t, 4>;
using F32x4 = Vec<float, 4>;
using F32x2 = Vec<float, 2>;
using I32x4 = Vec<int32_t, 4>;

}  // namespace hy4::dev

// Launch a kernel on an hy4::rt::Stream.  Errors of the launch itself are thrown as
// hy4::rt::RuntimeError by check_launch().
#if defined(HY4_BACKEND_CPU)
#define HY4_LAUNCH(kernel, grid, block, stream, ...) \
  ::hy4::cpu::launch(#kernel, kernel, (grid), (block), (stream), __VA_ARGS__)
#define HY4_LAUNCH_PRIMARY_IF(primary, kernel, grid, block, stream, ...)                                       \
  ::hy4::cpu::launch_ordered((primary) ? ::hy4::cpu::LaunchOrder::Primary : ::hy4::cpu::LaunchOrder::Normal, \
                             #kernel, kernel, (grid), (block), (stream), __VA_ARGS__)
#define HY4_LAUNCH_DEPENDENT_IF(dependent, kernel, grid, block, stream, ...)                                       \
  ::hy4::cpu::launch_ordered((dependent) ? ::hy4::cpu::LaunchOrder::Dependent : ::hy4::cpu::LaunchOrder::Normal, \
                             #kernel, kernel, (grid), (block), (stream), __VA_ARGS__)
#elif defined(HY4_BACKEND_HIP)
#define HY4_LAUNCH(kernel, grid, block, stream, ...)                                          \
  do {                                                                                        \
    hipLaunchKernelGGL(kernel, (grid), (block), 0, static_cast<hipStream_t>((stream).handle), \
                       __VA_ARGS__);                                                          \
    ::hy4::rt::check_launch(#kernel);                                                         \
  } while (0)
// HIP has no dependent launch: the dependent is a plain launch after its primary.
#define HY4_LAUNCH_DEPENDENT_IF HY4_LAUNCH_PRIMARY_IF
#else
#define HY4_LAUNCH(kernel, grid, block, stream, ...)                                       \
  do {                                                                                     \
    kernel<<<(grid), (block), 0, static_cast<cudaStream_t>((stream).handle)>>>(__VA_ARGS__); \
    ::hy4::rt::check_launch(#kernel);                                                      \
  } while (0)
// The dependent: cudaLaunchKernelEx with programmatic stream serialization (captured into a
// graph as a programmatic edge).
#define HY4_LAUNCH_DEPENDENT_IF(dependent, kernel, grid, block, stream, ...)             \
  do {                                                                                  \
    cudaLaunchConfig_t hy4_cfg{};                                                       \
    hy4_cfg.gridDim = (grid);                                                           \
    hy4_cfg.blockDim = (block);                                                         \
    hy4_cfg.stream = static_cast<cudaStream_t>((stream).handle);                        \
    cudaLaunchAttribute hy4_attr[1];                                                    \
    hy4_attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;                \
    hy4_attr[0].val.programmaticStreamSerializationAllowed = 1;                         \
    hy4_cfg.attrs = hy4_attr;                                                           \
    hy4_cfg.numAttrs = (dependent) ? 1 : 0;                                             \
    (void)cudaLaunchKernelEx(&hy4_cfg, kernel, __VA_ARGS__);                            \
    ::hy4::rt::check_launch(#kernel);                                                   \
  } while (0)
#endif
#if !defined(HY4_BACKEND_CPU)
// On a GPU the primary is a plain launch (on CUDA its dev::launch_dependents() lets the
// dependent start).
#define HY4_LAUNCH_PRIMARY_IF(primary, ...) \
  do {                                      \
    (void)(primary);                        \
    HY4_LAUNCH(__VA_ARGS__);                \
  } while (0)
#endif

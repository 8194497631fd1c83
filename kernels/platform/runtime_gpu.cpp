// runtime_gpu.cpp: hy4::rt on HIP (AMD) and CUDA (NVIDIA).  The few runtime names the
// project uses are mapped here, as vLLM's cuda_compat.h does for kernels; Debian's
// HIP 5.2 NVIDIA headers do not build with CUDA 13, so CUDA is called directly.
#include "runtime.h"

#include <cstdio>
#include <string>

#if defined(HY4_BACKEND_HIP)
#include <hip/hip_runtime_api.h>
#define GPU(name) hip##name
using gpuStream_t = hipStream_t;
using gpuDeviceProp_t = hipDeviceProp_t;
using gpuGraph_t = hipGraph_t;
using gpuEvent_t = hipEvent_t;
using gpuGraphExec_t = hipGraphExec_t;
using gpuError_t = hipError_t;
static constexpr gpuError_t kSuccess = hipSuccess;
#define GPU_CAPTURE_MODE hipStreamCaptureModeThreadLocal
#define GPU_H2D hipMemcpyHostToDevice
#define GPU_D2H hipMemcpyDeviceToHost
#define GPU_D2D hipMemcpyDeviceToDevice
#elif defined(HY4_BACKEND_CUDA)
#include <cuda_runtime.h>
#define GPU(name) cuda##name
using gpuStream_t = cudaStream_t;
using gpuDeviceProp_t = cudaDeviceProp;
using gpuGraph_t = cudaGraph_t;
using gpuEvent_t = cudaEvent_t;
using gpuGraphExec_t = cudaGraphExec_t;
using gpuError_t = cudaError_t;
static constexpr gpuError_t kSuccess = cudaSuccess;
#define GPU_CAPTURE_MODE cudaStreamCaptureModeThreadLocal
#define GPU_H2D cudaMemcpyHostToDevice
#define GPU_D2H cudaMemcpyDeviceToHost
#define GPU_D2D cudaMemcpyDeviceToDevice
#else
#error "runtime_gpu.cpp is built only for HY4_BACKEND_HIP or HY4_BACKEND_CUDA"
#endif

namespace hy4::rt {
namespace {

void check(gpuError_t e, const char* what) {
  if (e == kSuccess) return;
  std::string msg = std::string(what) + " failed: " + GPU(GetErrorName)(e) + " (" + GPU(GetErrorString)(e) + ")";
#if defined(HY4_BACKEND_HIP)
  if (e == hipErrorNoDevice) throw NoDeviceError(msg);
#else
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) throw NoDeviceError(msg);
#endif
  throw RuntimeError(msg);
}

gpuStream_t S(Stream s) { return static_cast<gpuStream_t>(s.handle); }

}  // namespace

#if defined(HY4_BACKEND_HIP)
Backend backend() { return Backend::Hip; }
const char* backend_name() { return "hip"; }
#else
Backend backend() { return Backend::Cuda; }
const char* backend_name() { return "cuda"; }
#endif

int device_count() {
  int n = 0;
  if (GPU(GetDeviceCount)(&n) != kSuccess) {
    (void)GPU(GetLastError)();
    return 0;
  }
  return n;
}

std::string no_device_reason() {
  int n = 0;
  gpuError_t e = GPU(GetDeviceCount)(&n);
  if (e != kSuccess) {
    (void)GPU(GetLastError)();
    return std::string(backend_name()) + " runtime reports " + GPU(GetErrorName)(e) + ": " + GPU(GetErrorString)(e);
  }
  return n == 0 ? std::string(backend_name()) + " runtime reports 0 devices" : std::string();
}

void set_device(int index) { check(GPU(SetDevice)(index), "SetDevice"); }
int current_device() {
  int dev = 0;
  check(GPU(GetDevice)(&dev), "GetDevice");
  return dev;
}

std::string device_name() {
  int dev = 0;
  check(GPU(GetDevice)(&dev), "GetDevice");
  gpuDeviceProp_t p{};
  check(GPU(GetDeviceProperties)(&p, dev), "GetDeviceProperties");
#if defined(HY4_BACKEND_HIP)
  return std::string(p.name) + " (" + p.gcnArchName + ", wave" + std::to_string(p.warpSize) + ")";
#else
  return std::string(p.name) + " (sm_" + std::to_string(p.major) + std::to_string(p.minor) + ", warp" +
         std::to_string(p.warpSize) + ")";
#endif
}

// One attribute (plans ask at every launch: topk picks its instance by it), not the whole
// property struct.
int warp_size() {
  int dev = 0, w = 0;
  check(GPU(GetDevice)(&dev), "GetDevice");
#if defined(HY4_BACKEND_HIP)
  check(hipDeviceGetAttribute(&w, hipDeviceAttributeWarpSize, dev), "DeviceGetAttribute(warp size)");
#else
  check(cudaDeviceGetAttribute(&w, cudaDevAttrWarpSize, dev), "DeviceGetAttribute(warp size)");
#endif
  return w;
}

std::vector<int> supported_warp_sizes() { return {warp_size()}; }
void set_warp_size(int w) {
  if (w != warp_size())
    throw RuntimeError("set_warp_size(" + std::to_string(w) + "): this device runs warp " + std::to_string(warp_size()) + " only");
}

void begin_case_schedule(uint64_t) {}  // a GPU's scheduling is its own
uint64_t schedule_seed() { return 0; }
void set_schedule_seed(uint64_t) {}
void set_fault_hook(void (*)(const char*)) {}  // GPU faults come back as errors of the next synchronizing call

Stream create_stream() {
  gpuStream_t s{};
  check(GPU(StreamCreateWithFlags)(&s, GPU(StreamNonBlocking)), "StreamCreate");
  return Stream{s};
}
void destroy_stream(Stream s) { check(GPU(StreamDestroy)(S(s)), "StreamDestroy"); }
void synchronize(Stream s) { check(GPU(StreamSynchronize)(S(s)), "StreamSynchronize"); }

void* malloc_device(std::size_t bytes) {
  void* p = nullptr;
  check(GPU(Malloc)(&p, bytes == 0 ? 1 : bytes), "Malloc");
  return p;
}
void free_device(void* p) {
  if (p) check(GPU(Free)(p), "Free");
}
void copy_to_device(void* dst, const void* src, std::size_t bytes, Stream s) {
  if (bytes) check(GPU(MemcpyAsync)(dst, src, bytes, GPU_H2D, S(s)), "MemcpyAsync(H2D)");
}
void copy_to_host(void* dst, const void* src, std::size_t bytes, Stream s) {
  if (bytes) check(GPU(MemcpyAsync)(dst, src, bytes, GPU_D2H, S(s)), "MemcpyAsync(D2H)");
}
void copy_on_device(void* dst, const void* src, std::size_t bytes, Stream s) {
  if (bytes) check(GPU(MemcpyAsync)(dst, src, bytes, GPU_D2D, S(s)), "MemcpyAsync(D2D)");
}
void copy_2d_on_device(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch, std::size_t width,
                       std::size_t rows, Stream s) {
  if (width && rows)
    check(GPU(Memcpy2DAsync)(dst, dst_pitch, src, src_pitch, width, rows, GPU_D2D, S(s)), "Memcpy2DAsync(D2D)");
}
void fill_bytes(void* dst, int byte, std::size_t bytes, Stream s) {
  if (bytes) check(GPU(MemsetAsync)(dst, byte, bytes, S(s)), "MemsetAsync");
}

void begin_capture(Stream s) { check(GPU(StreamBeginCapture)(S(s), GPU_CAPTURE_MODE), "StreamBeginCapture"); }
GraphExec end_capture(Stream s) {
  gpuGraph_t g{};
  check(GPU(StreamEndCapture)(S(s), &g), "StreamEndCapture");
  gpuGraphExec_t e{};
#if defined(HY4_BACKEND_HIP)
  check(hipGraphInstantiate(&e, g, nullptr, nullptr, 0), "GraphInstantiate");
#else
  check(cudaGraphInstantiate(&e, g, 0), "GraphInstantiate");
#endif
  check(GPU(GraphDestroy)(g), "GraphDestroy");
  return GraphExec{e};
}
void replay(GraphExec g, Stream s) { check(GPU(GraphLaunch)(static_cast<gpuGraphExec_t>(g.handle), S(s)), "GraphLaunch"); }
void destroy_graph(GraphExec g) {
  if (g.handle) check(GPU(GraphExecDestroy)(static_cast<gpuGraphExec_t>(g.handle)), "GraphExecDestroy");
}

Event create_event() {
  gpuEvent_t e{};
  check(GPU(EventCreate)(&e), "EventCreate");
  return Event{e};
}
void destroy_event(Event e) { check(GPU(EventDestroy)(static_cast<gpuEvent_t>(e.handle)), "EventDestroy"); }
void record_event(Event e, Stream s) { check(GPU(EventRecord)(static_cast<gpuEvent_t>(e.handle), S(s)), "EventRecord"); }
float elapsed_ms(Event b, Event e) {
  check(GPU(EventSynchronize)(static_cast<gpuEvent_t>(e.handle)), "EventSynchronize");
  float ms = 0;
  check(GPU(EventElapsedTime)(&ms, static_cast<gpuEvent_t>(b.handle), static_cast<gpuEvent_t>(e.handle)),
        "EventElapsedTime");
  return ms;
}

void check_launch(const char* kernel_name) {
  gpuError_t e = GPU(GetLastError)();
  if (e != kSuccess) check(e, (std::string("launch of ") + kernel_name).c_str());
}

}  // namespace hy4::rt

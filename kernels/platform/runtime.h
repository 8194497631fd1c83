// runtime.h: the host side of the platform layer, the same API on every backend.
// Device memory, streams, copies, stream capture -> graph -> instantiate -> replay.
// Implemented by runtime_gpu.cpp (HIP and CUDA) and kernels/cpu/runtime_cpu.cpp.
// Every failure throws hy4::rt::RuntimeError naming the call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace hy4::rt {

struct RuntimeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Thrown by runtime calls when no device of the build's backend exists.
struct NoDeviceError : RuntimeError {
  using RuntimeError::RuntimeError;
};

enum class Backend { Cpu, Cuda, Hip };

Backend backend();
const char* backend_name();  // "cpu", "cuda", "hip"
// Number of devices the backend can run on: 1 for the CPU executor, the GPU count
// otherwise (0 when the driver reports none; never throws).
int device_count();
// Why device_count() is 0 (driver message), or "" when devices exist.
std::string no_device_reason();
void set_device(int index);
// The device this thread's calls go to (0 on the CPU backend).
int current_device();
// Device description, e.g. "NVIDIA H200 (sm_90)", "cpu-simt warp64".
std::string device_name();
// Threads per warp/wavefront the kernels run with on the current device.
int warp_size();
// Warp sizes the backend can run at: {32, 64} on the CPU executor, the device's own on
// a GPU.  set_warp_size(w) selects one; it throws RuntimeError for any other.
std::vector<int> supported_warp_sizes();
void set_warp_size(int w);

// The CPU executor's block and thread scheduling (kernels/cpu/executor_control.h).  A GPU
// has none to set: there begin_case_schedule and set_schedule_seed do nothing and
// schedule_seed() is 0.  begin_case_schedule(key): the launches after it are scheduled
// from (schedule_seed(), key, their number since the call), so a case run under its own
// key (the harness uses its seed) schedules every block the same way each time it runs.
void begin_case_schedule(uint64_t key);
uint64_t schedule_seed();
void set_schedule_seed(uint64_t seed);

struct Stream {
  void* handle = nullptr;
};
Stream create_stream();
void destroy_stream(Stream s);
void synchronize(Stream s);

void* malloc_device(std::size_t bytes);
void free_device(void* p);
void copy_to_device(void* dst, const void* src, std::size_t bytes, Stream s);
void copy_to_host(void* dst, const void* src, std::size_t bytes, Stream s);
void copy_on_device(void* dst, const void* src, std::size_t bytes, Stream s);
// rows x width bytes from src (rows src_pitch apart) to dst (rows dst_pitch apart): a
// strided view copied as the platform's own 2-D copy does it (hy4-bench's strided floor).
void copy_2d_on_device(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch, std::size_t width,
                       std::size_t rows, Stream s);
void fill_bytes(void* dst, int byte, std::size_t bytes, Stream s);

struct GraphExec {
  void* handle = nullptr;
};
void begin_capture(Stream s);
// Ends the capture and instantiates the graph.
GraphExec end_capture(Stream s);
void replay(GraphExec g, Stream s);
void destroy_graph(GraphExec g);

// Timing (the benchmark binary): events recorded on a stream.  The CPU backend runs
// work synchronously, so there an event is the host clock at the record.
struct Event {
  void* handle = nullptr;
};
Event create_event();
void destroy_event(Event e);
void record_event(Event e, Stream s);
// Milliseconds between two recorded events (synchronizes on `end`).
float elapsed_ms(Event begin, Event end);

// Called by HY4_LAUNCH after a GPU launch: throws if the launch was refused.
void check_launch(const char* kernel_name);

// A last call, with what happened, before the process dies of a kernel fault that
// cannot come back as an exception: on the CPU executor, a kernel thread touching
// unmapped memory (SIGSEGV / SIGBUS, after the line naming kernel, block and thread;
// ASan's death callback under ASan), or a block running past HY4_CPU_BLOCK_TIMEOUT_S
// (the watchdog, after its report).  Called at most once per set.  A GPU never calls
// it: its illegal address comes back as a RuntimeError from the next synchronizing call.
// nullptr: none.
void set_fault_hook(void (*hook)(const char* what));

}  // namespace hy4::rt

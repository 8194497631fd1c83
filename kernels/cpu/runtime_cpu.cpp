// runtime_cpu.cpp: hy4::rt on the CPU SIMT executor.
// "Device" memory is host memory filled with garbage at allocation, between guard
// pages.  Streams run work at once, in order.  While a stream captures, launches, copies and fills are recorded
// with their arguments by value (as GPU graph nodes are) and run again on each replay.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <memory>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include "../platform/runtime.h"
#include "simt.h"

namespace hy4::cpu {
void execute_launch(const char* name, dim3 grid, dim3 block, std::function<void()>& body, std::function<void()>* prior,
                    bool dependent);
}

namespace hy4::rt {
namespace {

struct CpuGraph {
  std::vector<std::function<void()>> nodes;
};
struct CpuStream {
  std::unique_ptr<CpuGraph> capture;
};

CpuStream* S(Stream s) {
  if (!s.handle) throw RuntimeError("cpu runtime: null stream");
  return static_cast<CpuStream*>(s.handle);
}

}  // namespace

// A primary launch (cpu::LaunchOrder::Primary) held back for the dependent launch that
// follows it; any other work on the stream runs it first.  Streams run their work at once
// on the calling thread, so one slot per host thread serves every stream.
thread_local std::function<void()> t_held_primary;
std::function<void()> take_held_primary() {
  std::function<void()> op = std::move(t_held_primary);
  t_held_primary = nullptr;
  return op;
}
void release_held_primary() {
  if (std::function<void()> op = take_held_primary()) op();
}

// Runs op now, or records it if the stream captures.  held: op deals with a held-back
// primary itself (the launches); any other op runs it first.
void enqueue_op(Stream s, std::function<void()> op, bool held) {
  if (!held) op = [inner = std::move(op)] {
    release_held_primary();
    inner();
  };
  CpuStream* st = S(s);
  if (st->capture)
    st->capture->nodes.push_back(std::move(op));
  else
    op();
}
void enqueue(Stream s, std::function<void()> op) { enqueue_op(s, std::move(op), false); }

Backend backend() { return Backend::Cpu; }
const char* backend_name() { return "cpu"; }
int device_count() { return 1; }
std::string no_device_reason() { return ""; }
void set_device(int index) {
  if (index != 0) throw RuntimeError("cpu runtime: set_device(" + std::to_string(index) + "): only device 0 exists");
}
int current_device() { return 0; }
std::string device_name() { return "cpu-simt warp" + std::to_string(hy4::cpu::warp_size()); }
int warp_size() { return hy4::cpu::warp_size(); }
std::vector<int> supported_warp_sizes() { return {32, 64}; }
void set_warp_size(int w) { hy4::cpu::set_warp_size(w); }
void set_fault_hook(void (*hook)(const char*)) { hy4::cpu::set_fault_hook(hook); }
void begin_case_schedule(uint64_t key) { hy4::cpu::begin_case_schedule(key); }
uint64_t schedule_seed() { return hy4::cpu::sched_seed(); }
void set_schedule_seed(uint64_t seed) { hy4::cpu::set_sched_seed(seed); }

Stream create_stream() { return Stream{new CpuStream()}; }
void destroy_stream(Stream s) { delete S(s); }
void synchronize(Stream s) {
  if (S(s)->capture) throw RuntimeError("cpu runtime: synchronize on a capturing stream");
  release_held_primary();
}

// Every allocation is 256-byte aligned (as cudaMalloc / hipMalloc) and ends flush with an
// inaccessible guard page, with another guard page before it: a kernel thread that reads
// or writes past either end by more than the allocation's rounding to 256 bytes dies
// with SIGSEGV, and the executor's fault reporter names the kernel, block and thread (a
// GPU: an illegal memory access, or compute-sanitizer's report).  The rounding itself
// (requested size to the next multiple of 256) is a red zone holding a canary; after
// every launch the red zones of the live allocations are compared, so a write into it
// fails the launch too.  Reads inside the red zone are the only overrun not seen.
namespace {
constexpr unsigned char kCanary = 0xE7;
struct Allocation {
  std::size_t bytes, body;  // requested; rounded to 256 (the red zone is [bytes, body))
  unsigned char* map;       // the mapping: guard page, data pages, guard page
  std::size_t map_bytes;
};
std::mutex g_alloc_mu;
std::map<unsigned char*, Allocation>& allocations() {
  static auto* m = new std::map<unsigned char*, Allocation>();  // never destroyed (frees at exit)
  return *m;
}
// The first allocation whose red zone was written, restored; empty if none.
std::string overrun_report() {
  std::lock_guard<std::mutex> lk(g_alloc_mu);
  for (auto& [p, a] : allocations())
    for (std::size_t i = a.bytes; i < a.body; ++i)
      if (p[i] != kCanary) {
        std::string what = "a write " + std::to_string(i - a.bytes) + " bytes past the end of a device allocation of " +
                           std::to_string(a.bytes) + " bytes";
        std::memset(p + a.bytes, kCanary, a.body - a.bytes);
        return what;
      }
  return "";
}
}  // namespace

void* malloc_device(std::size_t bytes) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t body = (bytes + 255) / 256 * 256;
  const std::size_t data = (body + page - 1) / page * page;
  const std::size_t total = data + 2 * page;
  void* m = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw RuntimeError("cpu runtime: malloc_device(" + std::to_string(bytes) + ") failed");
  auto* map = static_cast<unsigned char*>(m);
  if (mprotect(map, page, PROT_NONE) != 0 || mprotect(map + page + data, page, PROT_NONE) != 0) {
    munmap(map, total);
    throw RuntimeError("cpu runtime: malloc_device(" + std::to_string(bytes) + "): guard pages refused");
  }
  unsigned char* p = map + page + data - body;  // 256-aligned: page-aligned less a multiple of 256
  std::memset(p, 0xA5, bytes);  // device memory starts as garbage
  std::memset(p + bytes, kCanary, body - bytes);
  std::lock_guard<std::mutex> lk(g_alloc_mu);
  allocations()[p] = Allocation{bytes, body, map, total};
  return p;
}
void free_device(void* p) {
  Allocation a{};
  {
    std::lock_guard<std::mutex> lk(g_alloc_mu);
    auto it = allocations().find(static_cast<unsigned char*>(p));
    if (it == allocations().end()) {
      if (p == nullptr) return;  // as cudaFree(nullptr)
      // as cudaFree / hipFree of a pointer they did not hand out: an error, not a no-op
      throw RuntimeError("cpu runtime: free_device(" + std::to_string(reinterpret_cast<uintptr_t>(p)) +
                         "): not a live device allocation (freed twice, or not from malloc_device)");
    }
    a = it->second;
    allocations().erase(it);
  }
  munmap(a.map, a.map_bytes);
}
void copy_to_device(void* dst, const void* src, std::size_t bytes, Stream s) {
  if (bytes) enqueue(s, [=] { std::memcpy(dst, src, bytes); });
}
void copy_to_host(void* dst, const void* src, std::size_t bytes, Stream s) {
  if (bytes) enqueue(s, [=] { std::memcpy(dst, src, bytes); });
}
void copy_on_device(void* dst, const void* src, std::size_t bytes, Stream s) {
  if (bytes) enqueue(s, [=] { std::memmove(dst, src, bytes); });
}
void copy_2d_on_device(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch, std::size_t width,
                       std::size_t rows, Stream s) {
  if (width && rows)
    enqueue(s, [=] {
      for (std::size_t r = 0; r < rows; ++r)
        std::memmove(static_cast<char*>(dst) + r * dst_pitch, static_cast<const char*>(src) + r * src_pitch, width);
    });
}
void fill_bytes(void* dst, int byte, std::size_t bytes, Stream s) {
  if (bytes) enqueue(s, [=] { std::memset(dst, byte, bytes); });
}

void begin_capture(Stream s) {
  CpuStream* st = S(s);
  if (st->capture) throw RuntimeError("cpu runtime: begin_capture on a stream that already captures");
  st->capture = std::make_unique<CpuGraph>();
}
GraphExec end_capture(Stream s) {
  CpuStream* st = S(s);
  if (!st->capture) throw RuntimeError("cpu runtime: end_capture on a stream that does not capture");
  return GraphExec{st->capture.release()};
}
void replay(GraphExec g, Stream s) {
  if (!g.handle) throw RuntimeError("cpu runtime: replay of a null graph");
  CpuGraph* graph = static_cast<CpuGraph*>(g.handle);
  if (S(s)->capture) throw RuntimeError("cpu runtime: replay into a capturing stream is not supported");
  for (auto& node : graph->nodes) node();
  release_held_primary();  // a graph's last launch is never held past its replay
}
void destroy_graph(GraphExec g) { delete static_cast<CpuGraph*>(g.handle); }
Event create_event() { return Event{new std::chrono::steady_clock::time_point()}; }
void destroy_event(Event e) { delete static_cast<std::chrono::steady_clock::time_point*>(e.handle); }
void record_event(Event e, Stream s) {
  auto* t = static_cast<std::chrono::steady_clock::time_point*>(e.handle);
  enqueue(s, [t] { *t = std::chrono::steady_clock::now(); });
}
float elapsed_ms(Event b, Event e) {
  const auto d = *static_cast<std::chrono::steady_clock::time_point*>(e.handle) -
                 *static_cast<std::chrono::steady_clock::time_point*>(b.handle);
  return std::chrono::duration<float, std::milli>(d).count();
}
void check_launch(const char*) {}

}  // namespace hy4::rt

namespace hy4::cpu {
void submit_launch(const char* name, dim3 grid, dim3 block, hy4::rt::Stream stream, std::function<void()> body,
                   LaunchOrder order) {
  auto shared_body = std::make_shared<std::function<void()>>(std::move(body));
  auto run = [name, grid, block, shared_body](std::function<void()>* prior, bool dependent) {
    execute_launch(name, grid, block, *shared_body, prior, dependent);
    const std::string overrun = hy4::rt::overrun_report();
    if (!overrun.empty()) throw KernelFault("launch of " + std::string(name) + ": " + overrun + " (a GPU faults on it or corrupts its neighbour)");
  };
  switch (order) {
    case LaunchOrder::Normal:
      hy4::rt::enqueue_op(stream, [run] { run(nullptr, false); }, false);
      break;
    case LaunchOrder::Primary:  // held back for the dependent launch that follows
      hy4::rt::enqueue_op(stream, [run] {
        hy4::rt::release_held_primary();
        hy4::rt::t_held_primary = [run] { run(nullptr, false); };
      }, true);
      break;
    case LaunchOrder::Dependent:
      hy4::rt::enqueue_op(stream, [run] {
        std::function<void()> prior = hy4::rt::take_held_primary();
        run(prior ? &prior : nullptr, true);
      }, true);
      break;
  }
}
}  // namespace hy4::cpu

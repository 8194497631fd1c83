// simt_executor.cpp: the CPU SIMT executor behind simt.h.
//
// Scheduling: a launch's blocks are shuffled (seeded per launch) and taken by a pool
// of OS threads; a block's threads are fibers on one OS thread, resumed in a
// shuffled round-robin or warp by warp (each block's seed picks; see run_block).  A
// fiber runs until it reaches __syncthreads, a warp collective, or its end.  When no
// fiber of a block can run and not all are done, the block is deadlocked: the fault names
// who waits where and who is missing.  A fiber that never ends (a loop without end, with
// or without collectives in it) is found by the block watchdog instead (see Watch).
// ASan is told about every stack switch (__sanitizer_start/finish_switch_fiber).
// The switch itself (x86-64) saves the callee-saved registers and the stack pointer
// and nothing else: glibc's swapcontext also saves the signal mask, a system call per
// switch that made a launch of 65535 one-row blocks take 2 s.  Elsewhere: ucontext.
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>
#include <pthread.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "simt.h"
// The executor itself names the index fields; the kernel-side macros stay out.
#undef threadIdx
#undef blockIdx
#undef blockDim
#undef gridDim

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HY4_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define HY4_ASAN 1
#endif
#if defined(HY4_ASAN)
#include <sanitizer/common_interface_defs.h>
#endif

#if defined(__x86_64__)
#define HY4_FAST_SWITCH 1
// hy4_fiber_switch(&save_sp, new_sp): pushes rbp, rbx, r12-r15 and the MXCSR / x87
// control words, stores rsp in *save_sp, loads new_sp, pops the same and returns
// into the other context.
extern "C" void hy4_fiber_switch(void** save_sp, void* new_sp);
__asm__(R"(
  .text
  .globl hy4_fiber_switch
  .type hy4_fiber_switch,@function
hy4_fiber_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $16, %rsp
  stmxcsr 8(%rsp)
  fnstcw (%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr 8(%rsp)
  fldcw (%rsp)
  addq $16, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size hy4_fiber_switch,.-hy4_fiber_switch
)");
#endif

namespace hy4::cpu {
namespace {

// A context: the saved stack pointer (fast switch) or a ucontext.
struct Context {
#if defined(HY4_FAST_SWITCH)
  void* sp = nullptr;
#else
  ucontext_t uc;
#endif
};
void switch_context(Context& from, Context& to) {
#if defined(HY4_FAST_SWITCH)
  hy4_fiber_switch(&from.sp, to.sp);
#else
  swapcontext(&from.uc, &to.uc);
#endif
}
// Makes ctx start `entry` (which never returns) on the stack [base, base + size).
void make_context(Context& ctx, char* base, std::size_t size, void (*entry)()) {
#if defined(HY4_FAST_SWITCH)
  uintptr_t top = (reinterpret_cast<uintptr_t>(base) + size) & ~uintptr_t{15};
  uint64_t* sp = reinterpret_cast<uint64_t*>(top);
  *--sp = 0;                                   // entry's (absent) return address: rsp % 16 == 8 at entry
  *--sp = reinterpret_cast<uint64_t>(entry);   // where the switch's ret goes
  for (int i = 0; i < 6; ++i) *--sp = 0;       // rbp rbx r12 r13 r14 r15
  sp -= 2;                                     // fp control words: this thread's current ones
  uint32_t mxcsr;
  uint16_t fpcw;
  __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
  __asm__ volatile("fnstcw %0" : "=m"(fpcw));
  std::memcpy(reinterpret_cast<char*>(sp) + 8, &mxcsr, 4);
  std::memcpy(reinterpret_cast<char*>(sp), &fpcw, 2);
  ctx.sp = sp;
#else
  getcontext(&ctx.uc);
  ctx.uc.uc_stack.ss_sp = base;
  ctx.uc.uc_stack.ss_size = size;
  ctx.uc.uc_link = nullptr;
  makecontext(&ctx.uc, entry, 0);
#endif
}

std::atomic<int> g_warp_size{[] {
  const char* e = std::getenv("HY4_CPU_WARP_SIZE");
  int w = e ? std::atoi(e) : 64;
  return (w == 32 || w == 64) ? w : 64;
}()};

std::atomic<uint64_t> g_launch_counter{0};  // launches since the process began or begin_case_schedule
std::atomic<uint64_t> g_case_key{0};        // begin_case_schedule's key, mixed (0 before any)
std::atomic<uint64_t> g_sched_seed{[] {
  const char* e = std::getenv("HY4_CPU_SCHED_SEED");
  return e ? std::strtoull(e, nullptr, 0) : 0x5eedULL;
}()};
uint64_t sched_base_seed() { return g_sched_seed.load(); }

std::size_t stack_bytes() {
  static const std::size_t s = [] {
    const char* e = std::getenv("HY4_CPU_STACK_KIB");
    std::size_t kib = e ? std::strtoull(e, nullptr, 0) : 256;
    return std::max<std::size_t>(kib, 64) * 1024;
  }();
  return s;
}

enum class FState { Runnable, AtBarrier, AtWarp, AtPriorGrid, Done };
enum class WarpOp { Shuffle, Ballot, All, Sync };

const char* op_name(WarpOp op, ShuffleKind k) {
  if (op == WarpOp::Ballot) return "ballot";
  if (op == WarpOp::All) return "all";
  if (op == WarpOp::Sync) return "sync_warp";
  switch (k) {
    case ShuffleKind::Xor: return "shfl_xor";
    case ShuffleKind::Down: return "shfl_down";
    case ShuffleKind::Idx: return "shfl_idx";
  }
  return "?";
}

struct Stack {
  void* base = nullptr;  // includes the guard page
  std::size_t total = 0;
  char* usable = nullptr;
  std::size_t size = 0;
  // ASan's fake stack (stack-use-after-return frames) of the fibers run on this stack:
  // kept between fibers.  Letting ASan destroy it when a fiber ends and make a new one
  // lazily for the next fiber cost an mmap + munmap + page faults per thread per
  // launch - most of a small fuzz input's time (topk_fuzzer ran 13 inputs/s).
  void* asan_fake_stack = nullptr;
  Stack() {
    const std::size_t page = 4096;
    size = stack_bytes();
    total = size + page;
    base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
      std::fprintf(stderr, "hy4 cpu executor: cannot map a fiber stack\n");
      std::abort();
    }
    mprotect(base, page, PROT_NONE);  // overflow lands on the guard page
    usable = static_cast<char*>(base) + page;
  }
  ~Stack() { munmap(base, total); }
};

struct LaunchState;
struct Block;

struct Fiber {
  Context ctx;
  Stack* stack = nullptr;
  FState state = FState::Runnable;
  ThreadIndex idx;
  int linear = 0, warp = 0, lane = 0;
  std::size_t shared_cursor = 0;
  WarpOp op = WarpOp::Shuffle;
  ShuffleKind kind = ShuffleKind::Xor;
  int arg = 0;
  uint64_t value = 0, result = 0;
  void* fake_stack = nullptr;
  bool waited_prior = false;  // called dev::wait_prior_grid() (a dependent launch needs it of every thread)
};

struct SharedAlloc {
  std::string name;
  std::size_t count = 0, elem = 0;
  std::vector<unsigned char> data, written;
};

struct LaunchState {
  const char* name;
  dim3 grid, block;
  std::function<void()>* body;
  int warp;
  uint64_t seed;
  std::mutex mu;
  std::string first_fault;
  std::atomic<bool> faulted{false};
  uint64_t nblocks = 0;
  std::atomic<uint64_t> next_block{0};  // blocks handed out to the pool (and the watchdog's count)
  // A dependent launch (HY4_LAUNCH_DEPENDENT_IF): every thread must call
  // dev::wait_prior_grid().  `prior` is the primary launch the CPU runtime held back for it
  // (nullptr: none): it runs, on a helper thread, when the first block to get there has
  // no thread left that can run without it, so that block's threads did all they do
  // before their wait while the primary had not run (a GPU may start a dependent that
  // early); blocks that get there later wait for it.  Its fault is the launch's.
  bool dependent = false;
  std::function<void()>* prior = nullptr;
  std::mutex prior_mu;
  std::condition_variable prior_cv;
  int prior_state = 0;  // 0 not run, 1 running, 2 ended (under prior_mu)
  std::string prior_fault;
  void fault(const std::string& msg) {
    std::lock_guard<std::mutex> lk(mu);
    if (first_fault.empty()) first_fault = msg;
    faulted = true;
  }
};

struct Block {
  LaunchState* launch = nullptr;
  dim3 idx;
  int nthreads = 0;
  std::vector<Fiber>* fibers = nullptr;
  std::vector<SharedAlloc> shared;
  int barrier_arrivals = 0;
  int prior_waiters = 0;  // threads at dev::wait_prior_grid() while the prior grid has not ended
  std::vector<int> warp_arrivals, warp_count;
  bool abandoned = false;
  std::mt19937_64 rng;
};

struct Worker {
  Worker();
  ~Worker();
  // What this worker runs, for the block watchdog (another thread): the block's linear
  // index, -1 when none, and since when (steady clock, ns); the fiber's linear thread index.
  std::atomic<int64_t> watch_block{-1};
  std::atomic<int64_t> watch_since_ns{0};
  std::atomic<int> watch_thread{-1};
  // The kernel of that block (a launch's name: a string literal) and whether it is a
  // held-back primary run inside a dependent launch (tl_nested_launch), whose grid is not
  // the watched launch's.
  std::atomic<const char*> watch_kernel{nullptr};
  std::atomic<bool> watch_nested{false};
  Context sched_ctx;
  const void* sched_bottom = nullptr;
  std::size_t sched_size = 0;
  std::vector<std::unique_ptr<Stack>> stacks;
  std::vector<Fiber> fibers;
  Fiber* current = nullptr;
  Block* block = nullptr;
};
thread_local Worker tl_worker;

// ---- block watchdog ----------------------------------------------------------------
// A kernel thread that loops without end (a stride of 0, a bound never reached) keeps its
// block running for ever, whether or not it comes back to the scheduler at collectives:
// on a GPU the launch hangs.  A block takes milliseconds (the whole cpu ctest, ASan fuzz
// smoke included, passes with a 2 s limit), while a whole launch of 65535 blocks takes
// half a minute on two cores, so the watchdog times blocks, not launches.  (A process
// forked from one that launched has no watchdog: gtest's death tests here re-execute.)
// One watchdog thread looks every 200 ms; a block running past HY4_CPU_BLOCK_TIMEOUT_S
// seconds makes it print the kernel, grid and every running block with its thread last
// resumed, run the fault hook (the harness writes the open case's file) and abort, so a
// hang fails its test within a minute, not at ctest's limit.
struct Watch {
  std::mutex mu;                 // held to start / end a launch and to report one
  const LaunchState* launch = nullptr;  // the launch in progress (under mu), or nullptr
  int limit_s = 0;               // of the launch in progress
  std::vector<Worker*> workers;  // every thread's Worker (under mu)
};
int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
Watch& watch() {
  static Watch* w = new Watch;  // never destroyed: the watchdog may outlive static destruction
  return *w;
}
Worker::Worker() {
  std::lock_guard<std::mutex> lk(watch().mu);
  watch().workers.push_back(this);
}
Worker::~Worker() {
  std::lock_guard<std::mutex> lk(watch().mu);
  auto& ws = watch().workers;
  ws.erase(std::remove(ws.begin(), ws.end(), this), ws.end());
}

std::string where(const Block& b) {
  std::ostringstream os;
  os << "kernel " << b.launch->name << ", block (" << b.idx.x << "," << b.idx.y << "," << b.idx.z << ")";
  return os.str();
}
std::string where(const Block& b, const Fiber& f) {
  std::ostringstream os;
  os << where(b) << ", thread (" << f.idx.threadIdx.x << "," << f.idx.threadIdx.y << "," << f.idx.threadIdx.z << ")";
  return os.str();
}

// Every warp collective and barrier finds its worker: through a trivially initialised
// thread_local pointer, because each access to tl_worker itself (a non-trivial
// thread_local) goes through the TLS init wrapper - 18 % of a fuzz input's time.
thread_local Worker* tl_worker_ptr = nullptr;
void install_fault_reporter();
std::atomic<void (*)(const char*)> g_fault_hook{nullptr};  // set_fault_hook's: run once by a reporter
constexpr const char* kUnmappedFault =
    "a kernel thread touched unmapped memory (SIGSEGV on the CPU executor; on a GPU an illegal address)";
void run_fault_hook(const char* what) {
  if (void (*hook)(const char*) = g_fault_hook.exchange(nullptr)) hook(what);
}
#if defined(HY4_ASAN)
void asan_death_callback() { run_fault_hook(kUnmappedFault); }
#endif
Worker& W() {
  Worker* w = tl_worker_ptr;
  if (__builtin_expect(w == nullptr, 0)) {
    w = tl_worker_ptr = &tl_worker;
    install_fault_reporter();
  }
  return *w;
}

// A kernel thread that touches unmapped memory (a GPU: "an illegal memory access was
// encountered") dies with SIGSEGV; before the process ends, one line names the kernel,
// block and thread, and the address (a fiber's stack overflow lands on its guard page).
// Under ASan, ASan's own report does this.  The handler runs on an alternate stack.
void fault_reporter(int sig, siginfo_t* info, void*) {
  Worker* w = tl_worker_ptr;
  char line[512];
  if (w && w->current && w->block) {
    const Fiber& f = *w->current;
    const Block& b = *w->block;
    const int n = std::snprintf(line, sizeof line,
                                "hy4 cpu executor: kernel %s, block (%u,%u,%u), thread (%u,%u,%u): %s at address %p "
                                "(on a GPU: an illegal memory access)\n",
                                b.launch->name, b.idx.x, b.idx.y, b.idx.z, f.idx.threadIdx.x, f.idx.threadIdx.y,
                                f.idx.threadIdx.z, sig == SIGBUS ? "bus error" : "invalid memory access", info->si_addr);
    if (n > 0) (void)!write(2, line, static_cast<std::size_t>(std::min<int>(n, sizeof line - 1)));
  }
  signal(sig, SIG_DFL);  // a fault inside the hook ends the process at once
  run_fault_hook(kUnmappedFault);
  raise(sig);
}

void install_fault_reporter() {
#if !defined(HY4_ASAN)
  static thread_local std::vector<char> alt(64 * 1024);
  stack_t ss{};
  ss.ss_sp = alt.data();
  ss.ss_size = alt.size();
  sigaltstack(&ss, nullptr);
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa{};
    sa.sa_sigaction = fault_reporter;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    struct sigaction old{};
    // Only where nobody else (a debugger's runtime, a sanitizer) installed one.
    if (sigaction(SIGSEGV, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) sigaction(SIGSEGV, &sa, nullptr);
    if (sigaction(SIGBUS, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) sigaction(SIGBUS, &sa, nullptr);
  });
#endif
}
Fiber& cur() {
  Fiber* f = W().current;
  if (!f) {
    std::fprintf(stderr, "hy4 cpu executor: a device-side call outside a kernel\n");
    std::abort();
  }
  return *f;
}

void yield_to_scheduler(Fiber& f, bool final) {
  Worker& w = W();
#if defined(HY4_ASAN)
  // A finished fiber's frames are all released; its fake stack stays with the stack (whose
  // Worker lives as long as the process: see run_held_primary).
  __sanitizer_start_switch_fiber(final ? &f.stack->asan_fake_stack : &f.fake_stack, w.sched_bottom,
                                 w.sched_size);
#else
  (void)final;
#endif
  switch_context(f.ctx, w.sched_ctx);
#if defined(HY4_ASAN)
  __sanitizer_finish_switch_fiber(f.fake_stack, &w.sched_bottom, &w.sched_size);
#endif
}

void fiber_entry() {
  Worker& w = W();
  Fiber& f = *w.current;
#if defined(HY4_ASAN)
  __sanitizer_finish_switch_fiber(f.stack->asan_fake_stack, &w.sched_bottom, &w.sched_size);
#endif
  (*w.block->launch->body)();
  f.state = FState::Done;
  yield_to_scheduler(f, true);
  std::abort();  // a finished fiber is never resumed
}

void run_fiber(Fiber& f) {
  Worker& w = W();
  w.current = &f;
  w.watch_thread.store(f.linear, std::memory_order_relaxed);
#if defined(HY4_ASAN)
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, f.stack->usable, f.stack->size);
#endif
  switch_context(w.sched_ctx, f.ctx);
#if defined(HY4_ASAN)
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
  w.current = nullptr;
}

// The fault messages of resolve_warp, out of line: an std::ostringstream in the hot
// function gave every warp collective a large ASan-instrumented stack frame (fake
// frame, shadow poisoning) - a third of a small fuzz input's time.
[[gnu::noinline, gnu::cold]] void fault_mixed_collectives(Block& b, int warp, int lane, const Fiber& f0,
                                                          const Fiber& fl) {
  std::ostringstream os;
  os << where(b) << ": lanes of warp " << warp << " stand at different warp collectives (lane 0 at "
     << op_name(f0.op, f0.kind) << ", lane " << lane << " at " << op_name(fl.op, fl.kind) << ")";
  b.launch->fault(os.str());
  b.abandoned = true;
}
[[gnu::noinline, gnu::cold]] void fault_missing_lane(Block& b, const Fiber& fl, int src, int warp, int count) {
  std::ostringstream os;
  os << where(b, fl) << ": " << op_name(fl.op, fl.kind) << " reads lane " << src << " of warp " << warp
     << ", which has only " << count << " threads (the value is undefined on a GPU)";
  b.launch->fault(os.str());
}

[[gnu::noinline, gnu::cold]] void fault_shuffle_offset(Block& b, const Fiber& fl, int ws) {
  std::ostringstream os;
  os << where(b, fl) << ": " << op_name(fl.op, fl.kind) << " with " << (fl.kind == ShuffleKind::Xor ? "mask " : "delta ")
     << fl.arg << ", outside [0, " << ws << ") (CUDA takes its low 5 bits, HIP returns the lane's own value)";
  b.launch->fault(os.str());
}

void resolve_warp(Block& b, int warp) {
  auto& fs = *b.fibers;
  const int ws = b.launch->warp;
  const int first = warp * ws;
  const int count = b.warp_count[warp];
  Fiber& f0 = fs[first];
  for (int l = 1; l < count; ++l) {
    Fiber& fl = fs[first + l];
    if (fl.op != f0.op || (fl.op == WarpOp::Shuffle && fl.kind != f0.kind)) {
      fault_mixed_collectives(b, warp, l, f0, fl);
      return;
    }
  }
  if (f0.op == WarpOp::Shuffle) {
    for (int l = 0; l < count; ++l) {
      Fiber& fl = fs[first + l];
      int src = l;
      bool own = false;
      switch (fl.kind) {
        // A mask or delta outside [0, ws) has no one meaning on GPUs: CUDA's shfl.sync
        // keeps its low 5 bits (xor 33 is xor 1), HIP's __shfl_xor / __shfl_down give the
        // lane its own value (and a negative one reaches ds_bpermute's wrapped address).
        case ShuffleKind::Xor:
        case ShuffleKind::Down:
          if (fl.arg < 0 || fl.arg >= ws) {
            fault_shuffle_offset(b, fl, ws);
            own = true;
          } else {
            src = fl.kind == ShuffleKind::Xor ? l ^ fl.arg : l + fl.arg;
            own = src >= ws;  // shfl_down past the warp's last lane: the lane's own value
          }
          break;
        case ShuffleKind::Idx:
          src = ((fl.arg % ws) + ws) % ws;
          break;
      }
      if (own) {
        fl.result = fl.value;
      } else if (src >= count) {
        fault_missing_lane(b, fl, src, warp, count);
        fl.result = fl.value;
      } else {
        fl.result = fs[first + src].value;
      }
    }
  } else {
    uint64_t bits = 0;
    for (int l = 0; l < count; ++l)
      if (fs[first + l].value) bits |= uint64_t{1} << l;
    const uint64_t full = count == 64 ? ~uint64_t{0} : ((uint64_t{1} << count) - 1);
    for (int l = 0; l < count; ++l) fs[first + l].result = f0.op == WarpOp::Ballot ? bits : uint64_t(bits == full);
  }
  for (int l = 0; l < count; ++l) fs[first + l].state = FState::Runnable;
  b.warp_arrivals[warp] = 0;
}

uint64_t warp_collective(WarpOp op, ShuffleKind kind, int arg, uint64_t value) {
  Fiber& f = cur();
  Block& b = *W().block;
  f.op = op;
  f.kind = kind;
  f.arg = arg;
  f.value = value;
  f.state = FState::AtWarp;
  if (++b.warp_arrivals[f.warp] == b.warp_count[f.warp]) resolve_warp(b, f.warp);
  yield_to_scheduler(f, false);
  return f.result;
}

void diagnose_deadlock(Block& b) {
  auto& fs = *b.fibers;
  int done = 0, at_bar = 0, at_warp = 0;
  const Fiber *first_done = nullptr, *first_bar = nullptr, *first_warp = nullptr;
  for (int i = 0; i < b.nthreads; ++i) {
    const Fiber& f = fs[i];
    if (f.state == FState::Done) { ++done; if (!first_done) first_done = &f; }
    if (f.state == FState::AtBarrier) { ++at_bar; if (!first_bar) first_bar = &f; }
    if (f.state == FState::AtWarp) { ++at_warp; if (!first_warp) first_warp = &f; }
  }
  std::ostringstream os;
  os << where(b) << ": deadlock: ";
  if (at_bar) {
    os << at_bar << " of " << b.nthreads << " threads wait at __syncthreads (first: thread " << first_bar->linear
       << ")";
    if (done) os << ", " << done << " exited without reaching it (first: thread " << first_done->linear << ")";
    if (at_warp) os << ", " << at_warp << " wait at a warp collective (first: thread " << first_warp->linear << ")";
  } else if (at_warp) {
    const Fiber& f = *first_warp;
    os << "warp " << f.warp << ": thread " << f.linear << " waits at " << op_name(f.op, f.kind) << " but only "
       << b.warp_arrivals[f.warp] << " of " << b.warp_count[f.warp] << " lanes reached a collective";
    if (done) os << " (" << done << " threads of the block exited, first: thread " << first_done->linear << ")";
  }
  b.launch->fault(os.str());
}

// Set on a thread that runs a held-back primary launch inside a dependent one: its launch
// runs every block on this thread (the dependent holds the pool and the launch lock).
// tl_nested_depth: how many held primaries deep this thread runs (0 outside any).
thread_local bool tl_nested_launch = false;
thread_local int tl_nested_depth = 0;

// The helper thread that runs held primaries at one nesting depth.  It lives as long as
// the process, like the pool's workers, so its Worker keeps its fiber stacks and their
// ASan fake stacks from one run to the next.  (A thread per run unmapped its stacks at
// its end but leaked their fake stacks, which nothing else frees: the routing fuzzer's
// dependent launches leaked 2.8 MiB mapped per helper fiber and reached libFuzzer's 4 GiB
// RSS limit after ~500 inputs.  Freeing each fake stack as its fiber ends made the fuzzer
// 3x slower.)  One run at a time per depth; a held primary that is itself a dependent
// launch runs its own prior on the helper one level deeper.
struct PrimaryHelper {
  std::mutex run_mu;  // one run at a time
  std::mutex mu;
  std::condition_variable cv;
  std::function<void()>* job = nullptr;  // under mu
  bool done = false;                     // under mu
  std::string fault;                     // written by the helper before done
  explicit PrimaryHelper(int depth) {
    std::thread([this, depth] {
      tl_nested_launch = true;
      tl_nested_depth = depth;
      for (;;) {
        std::function<void()>* f = nullptr;
        {
          std::unique_lock<std::mutex> lk(mu);
          cv.wait(lk, [&] { return job != nullptr; });
          f = job;
        }
        std::string what;
        try {
          (*f)();
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
          what = "the prior grid threw an unknown exception";
        }
        std::lock_guard<std::mutex> lk(mu);
        fault = std::move(what);
        job = nullptr;
        done = true;
        cv.notify_all();
      }
    }).detach();
  }
  std::string run(std::function<void()>& prior) {
    std::lock_guard<std::mutex> serial(run_mu);
    std::unique_lock<std::mutex> lk(mu);
    done = false;
    job = &prior;
    cv.notify_all();
    cv.wait(lk, [&] { return done; });
    return fault;
  }
};

// Runs a held-back primary launch to its end on the helper thread of the next nesting
// depth; returns its fault ("" if none).
std::string run_held_primary(std::function<void()>& prior) {
  static std::mutex helpers_mu;
  static std::vector<PrimaryHelper*> helpers;  // by depth - 1; never destroyed (detached threads use them)
  static pid_t helpers_pid = 0;                // a forked child has none of its parent's threads
  const int depth = tl_nested_depth + 1;
  PrimaryHelper* h = nullptr;
  {
    std::lock_guard<std::mutex> lk(helpers_mu);
    if (helpers_pid != getpid()) {
      helpers.clear();
      helpers_pid = getpid();
    }
    while (static_cast<int>(helpers.size()) < depth) helpers.push_back(new PrimaryHelper(static_cast<int>(helpers.size()) + 1));
    h = helpers[static_cast<std::size_t>(depth - 1)];
  }
  return h->run(prior);
}

// A dependent launch's prior grid: the first caller runs it, the others wait for its end.
void run_prior(LaunchState& L) {
  std::unique_lock<std::mutex> lk(L.prior_mu);
  if (L.prior_state == 0) {
    L.prior_state = 1;
    lk.unlock();
    std::string fault = run_held_primary(*L.prior);
    lk.lock();
    L.prior_fault = std::move(fault);
    L.prior_state = 2;
    L.prior_cv.notify_all();
  } else {
    L.prior_cv.wait(lk, [&] { return L.prior_state == 2; });
  }
}

void run_block(LaunchState& L, uint64_t block_linear) {
  Worker& w = W();
  Block b;
  b.launch = &L;
  b.idx = dim3(unsigned(block_linear % L.grid.x), unsigned((block_linear / L.grid.x) % L.grid.y),
               unsigned(block_linear / (uint64_t(L.grid.x) * L.grid.y)));
  b.nthreads = int(L.block.x * L.block.y * L.block.z);
  b.rng.seed(L.seed ^ (block_linear * 0x9E3779B97F4A7C15ULL));
  const int ws = L.warp;
  const int nwarps = (b.nthreads + ws - 1) / ws;
  b.warp_arrivals.assign(nwarps, 0);
  b.warp_count.assign(nwarps, ws);
  b.warp_count[nwarps - 1] = b.nthreads - (nwarps - 1) * ws;
  while (int(w.stacks.size()) < b.nthreads) w.stacks.push_back(std::make_unique<Stack>());
  w.fibers.resize(b.nthreads);
  b.fibers = &w.fibers;
  w.block = &b;
  w.watch_since_ns.store(steady_ns(), std::memory_order_relaxed);
  w.watch_kernel.store(L.name, std::memory_order_relaxed);
  w.watch_nested.store(tl_nested_launch, std::memory_order_relaxed);
  w.watch_block.store(int64_t(block_linear), std::memory_order_release);
  for (int i = 0; i < b.nthreads; ++i) {
    Fiber& f = w.fibers[i];
    f = Fiber{};
    f.stack = w.stacks[i].get();
    f.linear = i;
    f.warp = i / ws;
    f.lane = i % ws;
    f.idx.threadIdx = dim3(unsigned(i % L.block.x), unsigned((i / L.block.x) % L.block.y),
                           unsigned(i / (L.block.x * L.block.y)));
    f.idx.blockIdx = b.idx;
    f.idx.blockDim = L.block;
    f.idx.gridDim = L.grid;
    make_context(f.ctx, f.stack->usable, f.stack->size, fiber_entry);
  }
  // Two schedules, chosen per block by its seed (a launch of several blocks has both):
  //  - round-robin: every round resumes each runnable fiber once, in one shuffled order of
  //    the block's threads, so warps interleave finely between barriers;
  //  - warp-greedy: every round takes the warps in a shuffled order and runs one warp's
  //    lanes (round-robin among themselves, through its collectives) until each of them
  //    stands at the barrier or is done, before the next warp starts: one warp races
  //    ahead of the others, as one may on a GPU.  Round-robin lets every thread finish its
  //    part of a phase before any warp gets far; warp-greedy lets a warp read what another
  //    warp has not written yet (a histogram row zeroed by other warps, with no barrier
  //    between the zeroing and the counting, showed up only here).
  const bool greedy = (b.rng() & 1) != 0;
  std::vector<int> order(b.nthreads);
  for (int i = 0; i < b.nthreads; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), b.rng);
  std::vector<int> warp_order(nwarps);
  for (int i = 0; i < nwarps; ++i) warp_order[i] = i;
  std::vector<std::vector<int>> lanes_of(nwarps);  // each warp's threads, in the shuffled order
  for (int i : order) lanes_of[i / ws].push_back(i);

  // Resumes fiber i if it can run; releases the barrier when the last thread arrives.
  auto step = [&](int i) {
    Fiber& f = w.fibers[i];
    if (f.state != FState::Runnable) return false;
    run_fiber(f);
    if (!b.abandoned && f.state == FState::AtBarrier && b.barrier_arrivals == b.nthreads) {
      for (int j = 0; j < b.nthreads; ++j) w.fibers[j].state = FState::Runnable;
      b.barrier_arrivals = 0;
    }
    return true;
  };
  for (;;) {
    bool ran = false;
    if (greedy) {
      std::shuffle(warp_order.begin(), warp_order.end(), b.rng);
      for (int wi : warp_order) {
        for (bool progress = true; progress && !b.abandoned;) {
          progress = false;
          for (int i : lanes_of[wi]) {
            if (step(i)) ran = progress = true;
            if (b.abandoned) break;
          }
        }
        if (b.abandoned) break;
      }
    } else {
      for (int i : order) {
        if (step(i)) ran = true;
        if (b.abandoned) break;
      }
    }
    if (b.abandoned) break;
    bool all_done = true;
    for (int i = 0; i < b.nthreads; ++i) all_done = all_done && w.fibers[i].state == FState::Done;
    if (all_done) break;
    if (!ran && b.prior_waiters > 0) {  // every thread that can run stands at the wait
      run_prior(L);
      for (int i = 0; i < b.nthreads; ++i)
        if (w.fibers[i].state == FState::AtPriorGrid) w.fibers[i].state = FState::Runnable;
      b.prior_waiters = 0;
      continue;
    }
    if (!ran) {
      diagnose_deadlock(b);
      break;
    }
  }
  if (L.dependent && !b.abandoned)
    for (int i = 0; i < b.nthreads; ++i)
      if (!w.fibers[i].waited_prior) {
        L.fault(where(b, w.fibers[i]) + ": ended without dev::wait_prior_grid(), in a dependent launch " +
                "(HY4_LAUNCH_DEPENDENT_IF): every thread must wait for the prior grid (on a GPU the next " +
                "kernel in the stream could start before the prior grid ends)");
        break;
      }
  w.block = nullptr;
  w.watch_block.store(-1, std::memory_order_relaxed);
}

// A small persistent pool: blocks of one launch are spread over it.
class Pool {
 public:
  Pool() {
    const char* e = std::getenv("HY4_CPU_THREADS");
    unsigned n = e ? unsigned(std::atoi(e)) : std::thread::hardware_concurrency();
    n = std::max(1u, std::min(n, 64u));
    for (unsigned i = 1; i < n; ++i) threads_.emplace_back([this] { loop(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  std::size_t size() const { return threads_.size() + 1; }
  // Runs job on every pool thread and the caller; returns when all are done.
  void run(const std::function<void()>& job) {
    {
      std::unique_lock<std::mutex> lk(mu_);
      job_ = &job;
      pending_ = threads_.size();
      ++generation_;
    }
    cv_.notify_all();
    job();
    std::unique_lock<std::mutex> lk(mu_);
    done_cv_.wait(lk, [this] { return pending_ == 0; });
    job_ = nullptr;
  }

 private:
  void loop() {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void()>* job;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        job = job_;
      }
      (*job)();
      std::lock_guard<std::mutex> lk(mu_);
      if (--pending_ == 0) done_cv_.notify_all();
    }
  }
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void()>* job_ = nullptr;
  std::size_t pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

// The pool of this process.  A child forked without exec (gtest's default "fast" death
// tests, a harness that forks per case) has none of its parent's threads: its first launch
// makes a pool of its own.  The parent's is left as it is (the child cannot join threads it
// does not have).  Called under g_launch_mu, or by a held primary's launch while its
// dependent, which holds that lock, waits for it: never by two threads at once.
Pool& pool() {
  static Pool* p = nullptr;
  static pid_t owner = 0;
  if (owner != getpid()) {
    p = new Pool;
    owner = getpid();
  }
  return *p;
}
std::mutex g_launch_mu;  // one launch at a time: the pool serves one job

// The watchdog's limit: HY4_CPU_BLOCK_TIMEOUT_S (whole seconds, 0 = no watchdog), read by
// every launch; default 60.  An unreadable value is an error of the launch, naming it.
int block_timeout_s() {
  const char* e = std::getenv("HY4_CPU_BLOCK_TIMEOUT_S");
  if (!e) return 60;
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(e, &end, 10);
  if (end == e || *end != '\0' || errno != 0 || n < 0 || n > 86400)
    throw hy4::rt::RuntimeError("HY4_CPU_BLOCK_TIMEOUT_S='" + std::string(e) +
                                "': expected whole seconds from 0 (no watchdog) to 86400");
  return int(n);
}

std::string dims(uint64_t linear, dim3 d) {
  return "(" + std::to_string(linear % d.x) + "," + std::to_string(linear / d.x % d.y) + "," +
         std::to_string(linear / (uint64_t(d.x) * d.y)) + ")";
}

// The report when a block of the launch in progress runs past the limit, or "" when none
// does; made under Watch::mu (the launch cannot end meanwhile).  A block of a held-back
// primary (run on a helper thread for a dependent launch's wait; its grid is not L's) is
// listed by its kernel and linear index.  While one runs, only its blocks are timed (the
// dependent's blocks wait for it, they do not loop), and the report and *hung_kernel name
// that primary, not the dependent.
std::string hung_block_report(const LaunchState& L, int limit, const std::vector<Worker*>& workers,
                              std::string* hung_kernel) {
  const int64_t now = steady_ns();
  bool hung = false, primary_runs = false;
  const char* hung_primary = nullptr;
  for (const Worker* w : workers)
    primary_runs = primary_runs ||
                   (w->watch_block.load(std::memory_order_acquire) >= 0 && w->watch_nested.load(std::memory_order_relaxed));
  std::ostringstream running;
  for (const Worker* w : workers) {
    const int64_t b = w->watch_block.load(std::memory_order_acquire);
    if (b < 0) continue;
    const double secs = double(now - w->watch_since_ns.load(std::memory_order_relaxed)) * 1e-9;
    const bool nested = w->watch_nested.load(std::memory_order_relaxed);
    const char* kernel = w->watch_kernel.load(std::memory_order_relaxed);
    if (secs >= limit && nested == primary_runs) {
      hung = true;
      if (nested) hung_primary = kernel;
    }
    const int t = w->watch_thread.load(std::memory_order_relaxed);
    if (nested) {
      running << "\n  block " << b << " (linear) of the held-back primary " << (kernel ? kernel : "?")
              << " running for " << int64_t(secs) << " s";
      if (t >= 0) running << ", thread " << t << " (linear) last resumed";
      continue;
    }
    running << "\n  block " << dims(uint64_t(b), L.grid) << " running for " << int64_t(secs) << " s";
    if (t >= 0) running << ", thread " << dims(uint64_t(t), L.block) << " last resumed";
  }
  if (!hung) return "";
  std::ostringstream os;
  os << "hy4 cpu executor: kernel ";
  if (hung_primary) os << hung_primary << " (the held-back primary of dependent launch ";
  os << L.name << " (grid (" << L.grid.x << "," << L.grid.y << "," << L.grid.z << "), block (" << L.block.x << ","
     << L.block.y << "," << L.block.z << "), warp " << L.warp << ")" << (hung_primary ? ")" : "")
     << ": a block still runs after " << limit << " s (HY4_CPU_BLOCK_TIMEOUT_S): a kernel thread loops "
     << "without end (on a GPU the launch hangs); " << std::min(L.next_block.load(), L.nblocks) << " of "
     << L.nblocks << " blocks" << (hung_primary ? " of the dependent" : "") << " started." << running.str() << "\n";
  if (hung_kernel) *hung_kernel = hung_primary ? hung_primary : L.name;
  return os.str();
}

void watchdog_loop() {
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::string report, kernel;
    {
      Watch& w = watch();
      std::lock_guard<std::mutex> lk(w.mu);
      if (!w.launch) continue;
      const LaunchState& L = *w.launch;
      report = hung_block_report(L, w.limit_s, w.workers, &kernel);
      if (report.empty()) continue;
    }
    // Printed, the hook run and the process ended after the lock is let go: the hook may
    // touch this thread's Worker, whose construction takes Watch::mu.
    (void)!write(2, report.data(), report.size());
    run_fault_hook(("a block of " + kernel +
                    " ran past HY4_CPU_BLOCK_TIMEOUT_S: a kernel thread loops without end (on a GPU a hang)")
                       .c_str());
    std::abort();
  }
}

// The watchdog thread, one per process: a child forked without exec starts its own.  Its
// parent's Watch::mu may not be held across the fork (the watchdog takes it every 200 ms),
// and the parent's threads' Workers are not the child's: fork handlers take the lock
// before the fork and, in the child, keep only the forking thread's Worker.
void start_watchdog_once_per_process() {
  static std::once_flag handlers;
  std::call_once(handlers, [] {
    pthread_atfork([] { watch().mu.lock(); }, [] { watch().mu.unlock(); },
                   [] {
                     Watch& w = watch();
                     w.workers.assign(tl_worker_ptr ? 1 : 0, tl_worker_ptr);
                     w.mu.unlock();
                   });
  });
  static std::atomic<pid_t> running_in{0};
  const pid_t me = getpid();
  if (running_in.exchange(me) != me) std::thread(watchdog_loop).detach();
}

// Watches one launch while it lives (nothing when the limit is 0).
class LaunchWatch {
 public:
  LaunchWatch(const LaunchState& L, int limit_s) : on_(limit_s > 0) {
    if (!on_) return;
    start_watchdog_once_per_process();
    std::lock_guard<std::mutex> lk(watch().mu);
    watch().launch = &L;
    watch().limit_s = limit_s;
  }
  ~LaunchWatch() {
    if (!on_) return;
    std::lock_guard<std::mutex> lk(watch().mu);
    watch().launch = nullptr;
  }
  LaunchWatch(const LaunchWatch&) = delete;
  LaunchWatch& operator=(const LaunchWatch&) = delete;

 private:
  bool on_;
};

}  // namespace

const ThreadIndex& current_index() { return cur().idx; }

void set_warp_size(int w) {
  if (w != 32 && w != 64) throw hy4::rt::RuntimeError("hy4::cpu::set_warp_size: warp size must be 32 or 64, got " + std::to_string(w));
  g_warp_size = w;
}
int warp_size() {
  Worker& w = W();
  return w.block ? w.block->launch->warp : g_warp_size.load();
}
int lane_id() { return cur().lane; }
void set_sched_seed(unsigned long long seed) { g_sched_seed = seed; }
void set_fault_hook(void (*hook)(const char* what)) {
  g_fault_hook = hook;
  install_fault_reporter();  // before any kernel ran on this thread, too
#if defined(HY4_ASAN)
  __sanitizer_set_death_callback(hook ? asan_death_callback : nullptr);
#endif
}
unsigned long long sched_seed() { return g_sched_seed.load(); }
void begin_case_schedule(unsigned long long key) {
  std::lock_guard<std::mutex> guard(g_launch_mu);  // not between a launch's counter draw and its seed
  uint64_t z = key + 0x9E3779B97F4A7C15ULL;       // splitmix64's finalizer: nearby keys, unrelated schedules
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  g_case_key = z ^ (z >> 31);
  g_launch_counter = 0;
}

namespace {
[[gnu::noinline, gnu::cold]] void fault_misaligned(const void* addr, std::size_t bytes, const char* type,
                                                   const char* what) {
  Fiber& f = cur();
  Block& b = *W().block;
  std::ostringstream os;
  os << where(b, f) << ": " << bytes << "-byte vector " << what << " (" << type << ") at " << addr
     << " is not aligned to " << bytes << " bytes (a GPU faults on it)";
  b.launch->fault(os.str());
}
}  // namespace

// Every Vec load / store: the message path is out of line (see fault_mixed_collectives).
void check_vector_access(const void* addr, std::size_t bytes, const char* type, const char* what) {
  if (reinterpret_cast<uintptr_t>(addr) % bytes != 0) fault_misaligned(addr, bytes, type, what);
}

void sync_block() {
  Fiber& f = cur();
  Block& b = *W().block;
  f.state = FState::AtBarrier;
  ++b.barrier_arrivals;
  yield_to_scheduler(f, false);
}

// dev::wait_prior_grid(): the thread stands here until the held-back prior grid (if any)
// has ended; run_block runs it once no thread of the block can go on without it.
void wait_prior_grid() {
  Fiber& f = cur();
  Block& b = *W().block;
  LaunchState& L = *b.launch;
  f.waited_prior = true;
  if (L.prior == nullptr) return;
  {
    std::lock_guard<std::mutex> lk(L.prior_mu);
    if (L.prior_state == 2) return;
  }
  f.state = FState::AtPriorGrid;
  ++b.prior_waiters;
  yield_to_scheduler(f, false);
}

uint64_t warp_shuffle_bits(uint64_t v, ShuffleKind kind, int arg) { return warp_collective(WarpOp::Shuffle, kind, arg, v); }
uint64_t warp_ballot(bool p) { return warp_collective(WarpOp::Ballot, ShuffleKind::Xor, 0, p ? 1 : 0); }
bool warp_all(bool p) { return warp_collective(WarpOp::All, ShuffleKind::Xor, 0, p ? 1 : 0) != 0; }
// __syncwarp: every lane of the warp arrives before any goes on (its shared-memory
// writes are seen by the others after it); a lane that never arrives is reported.
void warp_sync() { warp_collective(WarpOp::Sync, ShuffleKind::Xor, 0, 0); }

SharedSlot shared_allocate(std::size_t count, std::size_t elem_size, const char* name) {
  Fiber& f = cur();
  Block& b = *W().block;
  const std::size_t k = f.shared_cursor++;
  if (k < b.shared.size()) {
    SharedAlloc& a = b.shared[k];
    if (a.count != count || a.elem != elem_size || a.name != name) {
      b.launch->fault(where(b, f) + ": shared array #" + std::to_string(k) + " declared as '" + name + "' [" +
                      std::to_string(count) + "] here but as '" + a.name + "' [" + std::to_string(a.count) +
                      "] by another thread");
    }
    return SharedSlot{a.data.data(), a.written.data()};
  }
  SharedAlloc a;
  a.name = name;
  a.count = count;
  a.elem = elem_size;
  a.data.resize(std::max<std::size_t>(count * elem_size, 1));
  for (std::size_t i = 0; i < a.data.size(); i += 8) {  // garbage, new at every block (8 bytes per draw)
    const uint64_t r = b.rng();
    std::memcpy(a.data.data() + i, &r, std::min<std::size_t>(8, a.data.size() - i));
  }
  a.written.assign(std::max<std::size_t>(count, 1), 0);
  b.shared.push_back(std::move(a));
  return SharedSlot{b.shared.back().data.data(), b.shared.back().written.data()};
}

void report_shared_uninit(const char* name, std::size_t index) {
  Fiber& f = cur();
  Block& b = *W().block;
  b.launch->fault(where(b, f) + ": reads " + name + "[" + std::to_string(index) +
                  "] of shared memory, which no thread of the block has written");
}
void report_shared_overdeclared(const char* name, std::size_t count, std::size_t max) {
  Fiber& f = cur();
  Block& b = *W().block;
  b.launch->fault(where(b, f) + ": uses " + std::to_string(count) + " elements of shared array " + name + "[" +
                  std::to_string(max) + "] (a GPU's array has only " + std::to_string(max) + ")");
}
void report_shared_oob(const char* name, std::size_t index, std::size_t count) {
  Fiber& f = cur();
  Block& b = *W().block;
  b.launch->fault(where(b, f) + ": index " + std::to_string(index) + " is past the end of shared array " + name +
                  "[" + std::to_string(count) + "]");
}
unsigned char* shared_scratch(std::size_t bytes) {
  thread_local std::vector<std::max_align_t> scratch;
  const std::size_t words = (bytes + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t);
  if (scratch.size() < words) scratch.resize(words);
  return reinterpret_cast<unsigned char*>(scratch.data());
}

// Runs one launch now (called by the CPU runtime on eager launches and on replay).
// dependent: launched with HY4_LAUNCH_DEPENDENT_IF; prior: the primary launch held back for
// it (or nullptr), run by the first block that waits for it (see LaunchState).
void execute_launch(const char* name, dim3 grid, dim3 block, std::function<void()>& body, std::function<void()>* prior,
                    bool dependent) {
  const uint64_t threads = uint64_t(block.x) * block.y * block.z;
  int limit_s = 0;
  try {
    if (block.x == 0 || block.y == 0 || block.z == 0 || threads > 1024 || block.z > 64 || grid.x == 0 ||
        grid.y == 0 || grid.z == 0 || grid.y > 65535 || grid.z > 65535 || grid.x > 0x7fffffffu) {
      std::ostringstream os;
      os << "launch of " << name << ": invalid configuration grid (" << grid.x << "," << grid.y << "," << grid.z
         << ") block (" << block.x << "," << block.y << "," << block.z << ")";
      throw hy4::rt::RuntimeError(os.str());
    }
    limit_s = tl_nested_launch ? 0 : block_timeout_s();  // a nested launch: its dependent's watch covers it
  } catch (...) {
    if (prior) run_held_primary(*prior);  // the stream's earlier work still happens
    throw;
  }
  std::unique_lock<std::mutex> guard(g_launch_mu, std::defer_lock);
  if (!tl_nested_launch) guard.lock();
  LaunchState L;
  L.dependent = dependent;
  L.prior = prior;
  L.name = name;
  L.grid = grid;
  L.block = block;
  L.body = &body;
  L.warp = g_warp_size.load();
  L.seed = sched_base_seed() ^ g_case_key.load() ^ (g_launch_counter.fetch_add(1) * 0xD1B54A32D192ED03ULL);
  const uint64_t nblocks = uint64_t(grid.x) * grid.y * grid.z;
  std::vector<uint64_t> perm(nblocks);
  for (uint64_t i = 0; i < nblocks; ++i) perm[i] = i;
  std::mt19937_64 rng(L.seed);
  std::shuffle(perm.begin(), perm.end(), rng);
  L.nblocks = nblocks;
  const LaunchWatch watched(L, limit_s);
  std::function<void()> job = [&] {
    for (;;) {
      uint64_t i = L.next_block.fetch_add(1);
      if (i >= nblocks || L.faulted) return;
      run_block(L, perm[i]);
    }
  };
  if (nblocks == 1 || pool().size() == 1 || tl_nested_launch)
    job();
  else
    pool().run(job);
  if (L.prior) run_prior(L);  // no block waited (a fault), or it ended first: the primary runs now
  if (!L.prior_fault.empty()) throw KernelFault(L.prior_fault);
  if (L.faulted) throw KernelFault(L.first_fault);
}

}  // namespace hy4::cpu

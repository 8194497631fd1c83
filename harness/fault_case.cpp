#include "fault_case.h"

#include <atomic>
#include <cstdio>
#include <mutex>

#include "platform/runtime.h"

namespace hy4::harness {
namespace {

std::atomic<KeepCaseOnFault*> g_open{nullptr};  // the innermost open scope
std::atomic<bool> g_enabled{true};

void on_kernel_fault(const char* what) {
  if (const KeepCaseOnFault* k = g_open.load()) k->save(what);
}

}  // namespace

KeepCaseOnFault::KeepCaseOnFault(std::function<CaseFile()> to_file, bool graph)
    : to_file_(std::move(to_file)), graph_(graph), exceptions_at_open_(std::uncaught_exceptions()),
      outer_(g_open.exchange(this)) {
  static std::once_flag hooked;
  std::call_once(hooked, [] { hy4::rt::set_fault_hook(on_kernel_fault); });
}

KeepCaseOnFault::~KeepCaseOnFault() {
  g_open.store(outer_);
  if (std::uncaught_exceptions() > exceptions_at_open_) save("an error left the launches (see the test's message)");
}

void KeepCaseOnFault::set_enabled(bool on) { g_enabled = on; }

std::string KeepCaseOnFault::save(const std::string& what) const noexcept {
  if (!g_enabled) return "";
  try {
    CaseFile c = to_file_();
    c.text["fault"] = what;
    const int warp = hy4::rt::backend() == hy4::rt::Backend::Cpu ? hy4::rt::warp_size() : 0;
    const std::string path = save_failed_case(c, c.op + ".fault." + std::to_string(c.get_or("seed", 0)));
    if (path.empty()) {
      std::fprintf(stderr, "hy4: %s case faulted: %s; its case file could not be written to %s\n", c.op.c_str(),
                   what.c_str(), failed_case_dir().c_str());
      return "";
    }
    const std::string flags =
        (warp ? " --warp " + std::to_string(warp) : std::string()) + (graph_ ? " --graph" : "");
    std::fprintf(stderr, "hy4: %s case faulted: %s; case written to %s; replay: hy4-repro%s %s\n", c.op.c_str(),
                 what.c_str(), path.c_str(), flags.c_str(), path.c_str());
    return path;
  } catch (...) {
    std::fprintf(stderr, "hy4: a case faulted and its case file could not be made\n");
    return "";
  }
}

}  // namespace hy4::harness

#include "suite.h"

#include <cstdlib>
#include <cstring>


namespace hy4::test {

const std::vector<uint64_t>& seed_list() {
  static const std::vector<uint64_t> seeds = {
      0x0000000000000001ULL, 0x00000000000000ffULL, 0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL,
      0xa4093822299f31d0ULL, 0x082efa98ec4e6c89ULL, 0x452821e638d01377ULL, 0xbe5466cf34e90c6cULL,
      0xc0ac29b7c97c50ddULL, 0x3f84d5b5b5470917ULL, 0x9216d5d98979fb1bULL, 0xd1310ba698dfb5acULL,
  };
  return seeds;
}

bool device_present() { return hy4::rt::device_count() > 0; }
std::string device_absence_reason() {
  std::string r = hy4::rt::no_device_reason();
  return r.empty() ? "no device" : r;
}
bool device_required() {
  const char* e = std::getenv("HY4_REQUIRE_GPU");
  return e && std::strcmp(e, "0") != 0 && *e;
}

std::vector<int> runnable_warp_sizes() {
  if (!device_present()) return {};
  return hy4::rt::supported_warp_sizes();
}

void use_warp_size(int w) { hy4::rt::set_warp_size(w); }

std::string save_case_for_replay(const harness::CaseFile& c, const std::string& stem) {
  const std::string path = harness::save_failed_case(c, stem);
  if (path.empty()) return "(could not write the case file to " + harness::failed_case_dir() + ")";
  return "case written to " + path + "; replay: hy4-repro " + path;
}

}  // namespace hy4::test

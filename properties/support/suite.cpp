#include "suite.h"

namespace hy4::test {

std::string save_case_for_replay(const harness::CaseFile& c, const std::string& stem) {
  const std::string path = harness::save_failed_case(c, stem);
  if (path.empty()) return "(could not write the case file to " + harness::failed_case_dir() + ")";
  return "case written to " + path + "; replay: hy4-repro " + path;
}

}  // namespace hy4::test

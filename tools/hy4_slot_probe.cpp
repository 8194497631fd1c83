// hy4-slot-probe: proves CTest's GPU assignment is honoured (the resource self-test,
// ci/resource_selftest.sh).  Reads the assignment the way every test main does, holds
// a lock named after the assigned slot for a while (a second test on the same slot at
// the same time fails), and appends "<test> <slot>" to $HY4_SLOT_LOG.
//   hy4-slot-probe NAME         exit 0 ok, 1 no assignment / slot already held
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "session.h"

int main(int argc, char** argv) {
  const std::string name = argc > 1 ? argv[1] : "probe";
  std::string type, id;
  try {
    if (!hy4::harness::ctest_assignment(&type, &id)) {
      std::fprintf(stderr, "hy4-slot-probe %s: FAILED: CTest assigned no resource\n", name.c_str());
      return 1;
    }
    std::printf("hy4-slot-probe %s: %s\n", name.c_str(), hy4::harness::select_assigned_device().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hy4-slot-probe %s: FAILED: %s\n", name.c_str(), e.what());
    return 1;
  }
  const char* dir = std::getenv("HY4_SLOT_LOCK_DIR");
  const std::string lock = std::string(dir ? dir : "/tmp") + "/slot-" + type + "-" + id;
  if (::mkdir(lock.c_str(), 0700) != 0) {
    std::fprintf(stderr, "hy4-slot-probe %s: FAILED: %s %s is already in use by another test\n", name.c_str(),
                 type.c_str(), id.c_str());
    return 1;
  }
  ::usleep(400 * 1000);
  ::rmdir(lock.c_str());
  if (const char* log = std::getenv("HY4_SLOT_LOG")) {
    if (FILE* f = std::fopen(log, "a")) {
      std::fprintf(f, "%s %s\n", name.c_str(), id.c_str());
      std::fclose(f);
    }
  }
  return 0;
}

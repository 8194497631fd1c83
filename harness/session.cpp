// session.cpp: see session.h.
#include "session.h"

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace hy4::harness {

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

bool ctest_assignment(std::string* type_out, std::string* id_out) {
  // CTest run with a resource spec sets the count for every test, 0 for those that ask for
  // no resources (host-only tests, the cpu trees' tests): no assignment then.
  const char* count = std::getenv("CTEST_RESOURCE_GROUP_COUNT");
  if (!count || !*count || std::string(count) == "0") return false;
  const char* type = std::getenv("CTEST_RESOURCE_GROUP_0");
  if (!type || !*type) throw std::runtime_error("CTEST_RESOURCE_GROUP_COUNT is set but CTEST_RESOURCE_GROUP_0 is not");
  std::string var = std::string("CTEST_RESOURCE_GROUP_0_") + type;
  for (char& c : var) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const char* alloc = std::getenv(var.c_str());  // "id:3,slots:1"
  if (!alloc) throw std::runtime_error(var + " is not set: CTest assigned no " + type);
  const std::string a = alloc;
  const auto p = a.find("id:");
  if (p == std::string::npos) throw std::runtime_error(var + "='" + a + "' names no id");
  const auto comma = a.find(',', p);
  *type_out = type;
  *id_out = a.substr(p + 3, comma == std::string::npos ? std::string::npos : comma - p - 3);
  return true;
}

std::string select_assigned_device() {
  std::string type, id;
  if (!ctest_assignment(&type, &id)) return "";
  if (hy4::rt::backend() == hy4::rt::Backend::Cpu) return "fake " + type + " slot " + id + " (cpu backend)";
  const int n = hy4::rt::device_count();
  if (n == 0) throw std::runtime_error("CTest assigned " + std::string(type) + " " + id + " but " + device_absence_reason());
  char* end = nullptr;
  const long dev = std::strtol(id.c_str(), &end, 10);
  if (*end != '\0' || dev < 0 || dev >= n)
    throw std::runtime_error("CTest assigned " + type + " id '" + id + "', not a device index below " +
                             std::to_string(n));
  hy4::rt::set_device(static_cast<int>(dev));
  return type + " " + id + " assigned by CTest: " + hy4::rt::device_name();
}

}  // namespace hy4::harness

// session.h: what every program that runs kernels shares, tests or not (the
// conformance run, hy4-repro, the tools, the properties): the seed list, device
// presence and the CTest GPU assignment.  It lives in the harness so that the main
// job does not depend on the test tree (properties/support re-exports it for tests).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "platform/runtime.h"

namespace hy4::harness {

// The fixed seeds of the example-based tests and the conformance run: one place.
const std::vector<uint64_t>& seed_list();

// True when the build's backend has a device.  When not, the reason.
bool device_present();
std::string device_absence_reason();
// HY4_REQUIRE_GPU=1 (set by the GPU runner scripts and the GPU ctest variants):
// a missing device is a failure, not a skip.
bool device_required();

// Warp sizes this process can run kernels at: {32, 64} on the CPU backend, the
// device's own on a GPU.
std::vector<int> runnable_warp_sizes();
// Selects the warp size kernels run at (throws if the backend cannot).
void use_warp_size(int w);

// CTest resource allocation (ctest --resource-spec-file F -j N): when CTest assigned
// this process a GPU (CTEST_RESOURCE_GROUP_COUNT and CTEST_RESOURCE_GROUP_0_<TYPE>),
// selects that device and returns a line saying so; "" when CTest assigned nothing.
// Throws a std::runtime_error when an assignment exists but cannot be honoured (no
// device, an id past the device count): a test that asked for a GPU and got none fails.
// On the CPU backend the ids are fake slots, recorded but not selected.
std::string select_assigned_device();
// The raw assignment: false when CTest assigned nothing; throws when it is malformed.
bool ctest_assignment(std::string* type, std::string* id);

}  // namespace hy4::harness

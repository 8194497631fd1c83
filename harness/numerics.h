// numerics.h: comparison helpers shared by every op's harness: bf16 / fp32 ULP
// distances, float64 -> bf16 rounded once, special values, hex formatting.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace hy4::harness {

// float64 rounded once to bf16 (round-to-nearest-even, canonical NaN).
uint16_t bf16_from_f64(double x);
// Distance in units in the last place between two bf16 values on the ordered number
// line (+0 and -0 are 0 apart).  Neither may be NaN.
int64_t bf16_ulp_distance(uint16_t a, uint16_t b);
bool bf16_is_nan(uint16_t h);
std::string hex16(uint16_t v);
std::string hex32(uint32_t v);

// Special bf16 values: +-0, +-inf, NaN, smallest/largest subnormal and normal, +-1.
const std::vector<uint16_t>& bf16_specials();

// A bf16 drawn from a mix: mostly normals in +-[2^-8, 2^8), then specials, subnormals,
// huge and tiny values.  `special_rate` in [0,1].
uint16_t random_bf16(std::mt19937_64& rng, double special_rate);
// A gate value: the same mix but biased to where sigmoid matters, incl. the SPEC's
// -inf, -20, -0, +0, 20, +inf, NaN.
uint16_t random_gate_bf16(std::mt19937_64& rng, double special_rate);

}  // namespace hy4::harness

// SHA-256 (FIPS 180-4), for the output hash bench_e2e reports: the perf gate compares it with
// the hash of the quality render of the same corpus case.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace dit::bench {

class Sha256 {
 public:
  Sha256();
  void update(std::span<const std::byte> bytes);
  std::array<uint8_t, 32> finish();  // the object is spent afterwards

 private:
  void compress(const uint8_t* block);
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t length_bytes_ = 0;
};

// Lower-case hex digest of `bytes`.
std::string sha256_hex(std::span<const std::byte> bytes);

}  // namespace dit::bench

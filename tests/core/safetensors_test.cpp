// The safetensors reader and writer: exact half-precision conversions, round trips in every
// dtype, the writer's layout and atomicity, and a clear dit::Error for every malformed file.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/safetensors.h"
#include "tests/support/scratch_directory.h"
#include "tests/support/thrown_error.h"
#include "tests/support/test_support.h"

namespace dit {
namespace {

using test::ScratchDirectory;
using test::thrown_error;

uint32_t bits_of(float value) { return std::bit_cast<uint32_t>(value); }
float float_of(uint32_t bits) { return std::bit_cast<float>(bits); }

std::vector<std::byte> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

void write_bytes(const std::string& path, const std::vector<std::byte>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// ---------------------------------------------------------------------------------------------
// Half-precision conversions
// ---------------------------------------------------------------------------------------------

// binary16 decoded from its fields in double arithmetic: an independent statement of the format.
double f16_value(uint16_t bits) {
  const int sign = (bits & 0x8000) ? -1 : 1;
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  if (exponent == 31) return mantissa == 0 ? sign * HUGE_VAL : std::nan("");
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

// Nearest value (ties to even) on a grid whose spacing is 2^(max(exponent, min_exponent) - bits),
// in double, where every step is exact; beyond `overflow` the result is infinite, and an infinite
// value stays itself (its grid would be infinite too: inf / inf is NaN).
double round_to_format(float value, int mantissa_bits, int min_exponent, double overflow) {
  const double x = value;
  if (x == 0 || std::isinf(x)) return x;
  const int exponent = std::max(std::ilogb(x), min_exponent);
  const double spacing = std::ldexp(1.0, exponent - mantissa_bits);
  const double rounded = std::nearbyint(x / spacing) * spacing;
  if (std::fabs(rounded) >= overflow) return std::copysign(HUGE_VAL, x);
  return rounded == 0 ? std::copysign(0.0, x) : rounded;
}

void expect_same_value(double got, double want, float input, const char* format) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << format << " of " << input;
    return;
  }
  EXPECT_EQ(got, want) << format << " of " << input << " (bits 0x" << std::hex << bits_of(input) << ")";
  EXPECT_EQ(std::signbit(got), std::signbit(want)) << format << " sign of " << input;
}

TEST(HalfConversion, EveryF16PatternWidensExactlyAndNarrowsBack) {
  for (uint32_t pattern = 0; pattern <= 0xffff; ++pattern) {
    const auto bits = static_cast<uint16_t>(pattern);
    const float wide = f16_bits_to_float(bits);
    const double want = f16_value(bits);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(wide)) << std::hex << pattern;
      const uint16_t back = float_to_f16_bits(wide);
      ASSERT_EQ(back & 0x7c00, 0x7c00) << std::hex << pattern;
      ASSERT_NE(back & 0x3ff, 0) << "NaN 0x" << std::hex << pattern << " narrowed to infinity";
      ASSERT_EQ(back & 0x8000, bits & 0x8000);
      continue;
    }
    ASSERT_EQ(static_cast<double>(wide), want) << std::hex << pattern;
    ASSERT_EQ(std::signbit(wide), (bits & 0x8000) != 0) << std::hex << pattern;
    ASSERT_EQ(float_to_f16_bits(wide), bits) << std::hex << pattern;
  }
}

TEST(HalfConversion, F16LandmarksAreExact) {
  EXPECT_EQ(f16_bits_to_float(0x0001), 0x1p-24f);         // smallest subnormal
  EXPECT_EQ(f16_bits_to_float(0x03ff), 1023 * 0x1p-24f);  // largest subnormal
  EXPECT_EQ(f16_bits_to_float(0x0400), 0x1p-14f);         // smallest normal
  EXPECT_EQ(f16_bits_to_float(0x3c00), 1.0f);
  EXPECT_EQ(f16_bits_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(f16_bits_to_float(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(f16_bits_to_float(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(float_to_f16_bits(65519.996f), 0x7bff);
  EXPECT_EQ(float_to_f16_bits(65520.0f), 0x7c00);  // the tie rounds to even: infinity
  EXPECT_EQ(float_to_f16_bits(0x1p-25f), 0x0000);  // tie between 0 and 2^-24: even is 0
  EXPECT_EQ(float_to_f16_bits(std::nextafter(0x1p-25f, 1.0f)), 0x0001);
  EXPECT_EQ(float_to_f16_bits(3 * 0x1p-25f), 0x0002);  // tie between 1 and 2 units: even is 2
  EXPECT_EQ(float_to_f16_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_f16_bits(1e-30f), 0x0000);
  EXPECT_EQ(float_to_f16_bits(-1e30f), 0xfc00);
  EXPECT_EQ(float_to_f16_bits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(float_to_f16_bits(-std::numeric_limits<float>::infinity()), 0xfc00);
}

TEST(HalfConversion, F16NarrowingRoundsToNearestEven) {
  // Every midpoint between neighbouring halves, and the floats on either side of it.
  for (uint32_t pattern = 0; pattern < 0x7c00; ++pattern) {
    const double low = f16_value(static_cast<uint16_t>(pattern));
    const double high = pattern == 0x7bff ? 65536.0 : f16_value(static_cast<uint16_t>(pattern + 1));
    const auto middle = static_cast<float>((low + high) / 2);
    for (float x : {middle, std::nextafter(middle, 0.0f), std::nextafter(middle, 1e30f)}) {
      for (float signed_x : {x, -x}) {
        expect_same_value(f16_bits_to_float(float_to_f16_bits(signed_x)), round_to_format(signed_x, 10, -14, 65536.0),
                          signed_x, "F16");
      }
    }
  }
  const uint64_t seed = test::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 bits(static_cast<uint32_t>(seed));
  for (int i = 0; i < 1 << 20; ++i) {
    const float x = float_of(bits());
    const double want = std::isnan(x) ? NAN : round_to_format(x, 10, -14, 65536.0);
    expect_same_value(f16_bits_to_float(float_to_f16_bits(x)), want, x, "F16");
  }
}

// The bulk narrowings (on x86 with F16C, the instruction) against the scalar ones, bit for bit:
// every sign and exponent, with the mantissas where rounding turns (ties, carries, the edges)
// and random ones, NaNs and infinities included, at lengths that leave a scalar tail.
TEST(HalfConversion, BulkNarrowingMatchesTheScalarOneForEveryExponent) {
  std::vector<float> values;
  std::mt19937 random(20261204);
  const std::vector<uint32_t> edges{0,        1,        0xfff,    0x1000,   0x1001,   0x1fff,
                                    0x2000,   0x3000,   0x7fff,   0x8000,   0x8001,   0x400000,
                                    0x400001, 0x7fe000, 0x7fefff, 0x7ff000, 0x7ff001, 0x7fffff};
  for (uint32_t high = 0; high < 512; ++high) {  // sign and exponent
    for (uint32_t mantissa : edges) values.push_back(float_of(high << 23 | mantissa));
    for (int i = 0; i < 2048; ++i) values.push_back(float_of(high << 23 | (random() & 0x7fffffu)));
  }
  values.resize(values.size() - 3);  // not a multiple of eight
  std::vector<uint16_t> bulk(values.size()), serial(values.size()), bf16_bulk(values.size()),
      bf16_serial(values.size());
  floats_to_f16_bits(values.data(), bulk.data(), values.size());
  floats_to_f16_bits_serial(values.data(), serial.data(), values.size());
  floats_to_bf16_bits(values.data(), bf16_bulk.data(), values.size());
  floats_to_bf16_bits_serial(values.data(), bf16_serial.data(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t want = float_to_f16_bits(values[i]);
    ASSERT_EQ(bulk[i], want) << std::hex << bits_of(values[i]);
    ASSERT_EQ(serial[i], want) << std::hex << bits_of(values[i]);
    ASSERT_EQ(bf16_bulk[i], float_to_bf16_bits(values[i])) << std::hex << bits_of(values[i]);
    ASSERT_EQ(bf16_serial[i], bf16_bulk[i]) << std::hex << bits_of(values[i]);
  }
}

TEST(HalfConversion, EveryBf16PatternWidensExactlyAndNarrowsBack) {
  for (uint32_t pattern = 0; pattern <= 0xffff; ++pattern) {
    const auto bits = static_cast<uint16_t>(pattern);
    const float wide = bf16_bits_to_float(bits);
    ASSERT_EQ(bits_of(wide), pattern << 16);
    const uint16_t back = float_to_bf16_bits(wide);
    if (std::isnan(wide)) {
      ASSERT_TRUE(std::isnan(bf16_bits_to_float(back))) << std::hex << pattern;
    } else {
      ASSERT_EQ(back, bits) << std::hex << pattern;
    }
  }
}

TEST(HalfConversion, Bf16NarrowingRoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16_bits(1.0f + 0x1p-8f), 0x3f80);      // tie: even is 1.0
  EXPECT_EQ(float_to_bf16_bits(1.0f + 3 * 0x1p-8f), 0x3f82);  // tie: even is 1 + 2^-6
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(float_of(0x7f800001)))))
      << "a NaN whose payload is in the dropped bits must stay a NaN";
  const uint64_t seed = test::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 bits(static_cast<uint32_t>(seed));
  for (int i = 0; i < 1 << 20; ++i) {
    const float x = float_of(bits());
    const double want = std::isnan(x) ? NAN : round_to_format(x, 7, -126, 0x1p128);
    expect_same_value(bf16_bits_to_float(float_to_bf16_bits(x)), want, x, "BF16");
  }
}

// ---------------------------------------------------------------------------------------------
// Round trips
// ---------------------------------------------------------------------------------------------

// Values every dtype stores exactly: special values, that dtype's subnormals and extremes, and
// random values already rounded to the dtype.
std::vector<float> representable_values(DType dtype, uint64_t seed) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> values = {0.0f, -0.0f, 1.0f, -2.5f, 0.375f, inf, -inf, std::numeric_limits<float>::quiet_NaN()};
  switch (dtype) {
    case DType::F16: values.insert(values.end(), {0x1p-24f, -1023 * 0x1p-24f, 0x1p-14f, 65504.0f, -65504.0f}); break;
    case DType::BF16:
      values.insert(values.end(),
                    {bf16_bits_to_float(0x0001), bf16_bits_to_float(0x807f), bf16_bits_to_float(0x7f7f), 0x1p-126f});
      break;
    case DType::F32:
    case DType::F64:
      values.insert(values.end(), {std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::max(),
                                   std::numeric_limits<float>::min(), 1.0f / 3.0f});
      break;
    case DType::I64: break;
  }
  for (float random : test::random_normal(257, seed, 3.0f)) {
    if (dtype == DType::F16) random = f16_bits_to_float(float_to_f16_bits(random));
    if (dtype == DType::BF16) random = bf16_bits_to_float(float_to_bf16_bits(random));
    values.push_back(random);
  }
  return values;
}

void expect_identical(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " element " << i;
    } else {
      EXPECT_EQ(bits_of(got[i]), bits_of(want[i])) << what << " element " << i << ": " << got[i] << " vs " << want[i];
    }
  }
}

class FloatRoundTrip : public testing::TestWithParam<DType> {};

TEST_P(FloatRoundTrip, ValuesShapesAndMetadataSurvive) {
  const DType dtype = GetParam();
  const uint64_t seed = test::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  ScratchDirectory scratch;
  const std::string path = scratch.file("round_trip.safetensors");

  std::map<std::string, Tensor> tensors;
  Tensor values({static_cast<int64_t>(representable_values(dtype, seed).size())});
  values.data = representable_values(dtype, seed);
  tensors["a.values"] = values;
  tensors["b.empty"] = Tensor({0, 3});
  tensors["c.scalar"] = Tensor({}, 7.0f);
  Tensor matrix({2, 3, 5});
  for (size_t i = 0; i < matrix.data.size(); ++i) matrix.data[i] = static_cast<float>(i) - 11.0f;
  tensors["d.matrix"] = matrix;
  const std::map<std::string, std::string> metadata = {{"config", R"({"depth": 2})"}, {"empty", ""}};
  write_safetensors(path, tensors, metadata, dtype);

  for (const SafetensorsFile& file :
       {SafetensorsFile::open(path), SafetensorsFile::from_bytes(file_bytes(path), path)}) {
    EXPECT_EQ(file.path(), path);
    EXPECT_EQ(file.metadata(), metadata);
    ASSERT_EQ(file.tensors().size(), tensors.size());
    for (const auto& [name, tensor] : tensors) {
      const TensorView& view = file.at(name);
      EXPECT_EQ(view.name, name);
      EXPECT_EQ(view.dtype, dtype) << name;
      EXPECT_EQ(view.shape, tensor.shape) << name;
      EXPECT_EQ(view.bytes.size(), tensor.data.size() * dtype_size(dtype)) << name;
      const Tensor read = file.to_float(name, tensor.shape);
      EXPECT_EQ(read.shape, tensor.shape) << name;
      expect_identical(read.data, tensor.data, name);
      const std::vector<double> wide = file.to_double(name);
      std::vector<float> narrowed(wide.begin(), wide.end());
      expect_identical(narrowed, tensor.data, name + " through to_double");
    }
    EXPECT_EQ(file.to_int64("d.matrix").at(29), 18);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryFloatDtype, FloatRoundTrip,
                         testing::Values(DType::F64, DType::F32, DType::F16, DType::BF16),
                         [](const testing::TestParamInfo<DType>& info) { return dtype_name(info.param); });

TensorBytes int64_tensor(std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  TensorBytes tensor{DType::I64, std::move(shape), std::vector<std::byte>(values.size() * 8)};
  std::memcpy(tensor.bytes.data(), values.data(), tensor.bytes.size());
  return tensor;
}

TEST(IntegerRoundTrip, I64ExtremesSurvive) {
  ScratchDirectory scratch;
  const std::string path = scratch.file("int64.safetensors");
  const std::vector<int64_t> values = {std::numeric_limits<int64_t>::min(), -1, 0, 1, (int64_t{1} << 53) + 1,
                                       std::numeric_limits<int64_t>::max()};
  write_safetensors_bytes(path, {{"t", int64_tensor({2, 3}, values)}});
  const SafetensorsFile file = SafetensorsFile::open(path);
  EXPECT_EQ(file.at("t").dtype, DType::I64);
  EXPECT_EQ(file.at("t").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(file.to_int64("t"), values);
  const std::vector<double> wide = file.to_double("t");
  EXPECT_EQ(wide[0], -0x1p63);
  EXPECT_EQ(wide[4], 0x1p53);  // 2^53 + 1 rounds to even
  EXPECT_EQ(file.to_float("t").data[1], -1.0f);
}

TEST(IntegerRoundTrip, FloatTensorsConvertToInt64OnlyWhenIntegral) {
  ScratchDirectory scratch;
  const std::string path = scratch.file("floats.safetensors");
  Tensor integral({3});
  integral.data = {-3.0f, 0.0f, 16777216.0f};
  Tensor fractional({2});
  fractional.data = {1.0f, 2.5f};
  Tensor huge({1});
  huge.data = {0x1p63f};
  Tensor not_a_number({1});
  not_a_number.data = {std::numeric_limits<float>::quiet_NaN()};
  write_safetensors(path, {{"integral", integral}, {"fractional", fractional}, {"huge", huge}, {"nan", not_a_number}});
  const SafetensorsFile file = SafetensorsFile::open(path);
  EXPECT_EQ(file.to_int64("integral"), (std::vector<int64_t>{-3, 0, 16777216}));
  for (const char* name : {"fractional", "huge", "nan"}) {
    const Error error = thrown_error([&] { file.to_int64(name); });
    EXPECT_EQ(error.kind(), ErrorKind::invalid_file);
    EXPECT_NE(std::string(error.what()).find(std::string("tensor '") + name + "'"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("is not an int64 value"), std::string::npos) << error.what();
  }
}

TEST(MixedDtypes, TensorsAtUnalignedOffsetsReadCorrectly) {
  ScratchDirectory scratch;
  const std::string path = scratch.file("mixed.safetensors");
  // "a" is 6 bytes, so "b" starts at data offset 6 and "c" at 22: neither is 8-byte aligned.
  TensorBytes a{DType::F16, {3}, std::vector<std::byte>(6)};
  const uint16_t halves[3] = {0x3c00, 0x0001, 0xfc00};
  std::memcpy(a.bytes.data(), halves, 6);
  TensorBytes b{DType::F64, {2}, std::vector<std::byte>(16)};
  const double doubles[2] = {0.1, -1e300};
  std::memcpy(b.bytes.data(), doubles, 16);
  write_safetensors_bytes(path, {{"a", a}, {"b", b}, {"c", int64_tensor({1}, {-42})}});

  const SafetensorsFile file = SafetensorsFile::open(path);
  EXPECT_EQ(file.at("b").bytes.data() - file.at("a").bytes.data(), 6);
  EXPECT_EQ(file.to_float("a").data, (std::vector<float>{1.0f, 0x1p-24f, -std::numeric_limits<float>::infinity()}));
  EXPECT_EQ(file.to_double("b"), (std::vector<double>{0.1, -1e300}));
  EXPECT_EQ(file.to_float("b").data[0], 0.1f);
  EXPECT_EQ(file.to_float("b").data[1], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(file.to_int64("c"), (std::vector<int64_t>{-42}));
}

// ---------------------------------------------------------------------------------------------
// The writer's layout and atomicity
// ---------------------------------------------------------------------------------------------

TEST(Writer, HeaderIsSortedAlignedAndTilesTheData) {
  ScratchDirectory scratch;
  const std::string path = scratch.file("layout.safetensors");
  std::map<std::string, Tensor> tensors;
  tensors["zeta"] = Tensor({3}, 1.0f);
  tensors["alpha"] = Tensor({5}, 2.0f);
  tensors["Mid"] = Tensor({1, 1}, 3.0f);
  write_safetensors(path, tensors, {{"k", "v"}}, DType::F16);

  const std::vector<std::byte> bytes = file_bytes(path);
  ASSERT_GE(bytes.size(), 8u);
  uint64_t header_length = 0;
  std::memcpy(&header_length, bytes.data(), 8);
  EXPECT_EQ((8 + header_length) % 8, 0u) << "the data section must start 8-byte aligned";
  const std::string header(reinterpret_cast<const char*>(bytes.data()) + 8, header_length);
  size_t previous = 0;
  for (const char* key : {"\"Mid\"", "\"__metadata__\"", "\"alpha\"", "\"zeta\""}) {
    const size_t at = header.find(key);
    ASSERT_NE(at, std::string::npos) << key;
    EXPECT_GE(at, previous) << key << " is out of order in " << header;
    previous = at;
  }
  const auto json = nlohmann::json::parse(header);
  EXPECT_EQ(json["Mid"]["data_offsets"], nlohmann::json::array({0, 2}));
  EXPECT_EQ(json["alpha"]["data_offsets"], nlohmann::json::array({2, 12}));
  EXPECT_EQ(json["zeta"]["data_offsets"], nlohmann::json::array({12, 18}));
  EXPECT_EQ(bytes.size(), 8 + header_length + 18);
}

TEST(Writer, ReplacesAnExistingFileAndLeavesNoTemporaryFiles) {
  ScratchDirectory scratch;
  const std::string path = scratch.file("weights.safetensors");
  write_safetensors(path, {{"x", Tensor({2}, 1.0f)}});
  write_safetensors(path, {{"y", Tensor({4}, 2.0f)}});
  const SafetensorsFile file = SafetensorsFile::open(path);
  EXPECT_FALSE(file.contains("x"));
  EXPECT_EQ(file.to_float("y").data, std::vector<float>(4, 2.0f));
  const auto entries =
      std::distance(std::filesystem::directory_iterator(scratch.path()), std::filesystem::directory_iterator());
  EXPECT_EQ(entries, 1) << "a temporary file was left behind";
}

TEST(Writer, RefusedInputLeavesTheExistingFileUntouched) {
  ScratchDirectory scratch;
  const std::string path = scratch.file("weights.safetensors");
  write_safetensors(path, {{"x", Tensor({2}, 1.0f)}});
  const std::vector<std::byte> before = file_bytes(path);

  Tensor inconsistent({3});
  inconsistent.data.resize(2);
  Error error = thrown_error([&] { write_safetensors(path, {{"x", inconsistent}}); });
  EXPECT_EQ(error.kind(), ErrorKind::invalid_argument);
  EXPECT_NE(std::string(error.what()).find("tensor 'x' has shape [3] but 2 values"), std::string::npos) << error.what();

  error = thrown_error([&] { write_safetensors(path, {{"__metadata__", Tensor({1})}}); });
  EXPECT_EQ(error.kind(), ErrorKind::invalid_argument);
  EXPECT_NE(std::string(error.what()).find("reserved"), std::string::npos) << error.what();

  error = thrown_error([&] { write_safetensors(path, {{"x", Tensor({1})}}, {}, DType::I64); });
  EXPECT_EQ(error.kind(), ErrorKind::invalid_argument);

  error = thrown_error([&] { write_safetensors_bytes(path, {{"t", TensorBytes{DType::I64, {2}, {}}}}); });
  EXPECT_EQ(error.kind(), ErrorKind::invalid_argument);
  EXPECT_NE(std::string(error.what()).find("16 bytes) but 0 bytes"), std::string::npos) << error.what();

  EXPECT_EQ(file_bytes(path), before);
  const auto entries =
      std::distance(std::filesystem::directory_iterator(scratch.path()), std::filesystem::directory_iterator());
  EXPECT_EQ(entries, 1);
}

TEST(Writer, MissingDirectoryIsAnIoError) {
  ScratchDirectory scratch;
  const std::string path = scratch.file("no/such/dir/weights.safetensors");
  const Error error = thrown_error([&] { write_safetensors(path, {{"x", Tensor({1})}}); });
  EXPECT_EQ(error.kind(), ErrorKind::io);
  EXPECT_NE(std::string(error.what()).find(path), std::string::npos) << error.what();
  EXPECT_FALSE(std::filesystem::exists(path));
}

// ---------------------------------------------------------------------------------------------
// Lookups and open failures
// ---------------------------------------------------------------------------------------------

TEST(Reader, LookupErrorsNameTheTensorAndShapes) {
  ScratchDirectory scratch;
  const std::string path = scratch.file("one.safetensors");
  write_safetensors(path, {{"w", Tensor({2, 3})}});
  const SafetensorsFile file = SafetensorsFile::open(path);
  Error error = thrown_error([&] { file.at("missing.weight"); });
  EXPECT_EQ(error.kind(), ErrorKind::invalid_file);
  EXPECT_NE(std::string(error.what()).find("no tensor 'missing.weight'"), std::string::npos) << error.what();
  EXPECT_NE(std::string(error.what()).find(path), std::string::npos) << error.what();

  error = thrown_error([&] { file.to_float("w", {3, 2}); });
  EXPECT_EQ(error.kind(), ErrorKind::invalid_file);
  EXPECT_NE(std::string(error.what()).find("tensor 'w' has shape [2, 3], expected [3, 2]"), std::string::npos)
      << error.what();
}

// to_finite_float: the values of to_float, or an invalid_file error naming the tensor, its dtype
// and its first NaN or infinite element (after conversion to float32), in every stored dtype.
TEST(Reader, ToFiniteFloatRefusesTheFirstNonFiniteElement) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const struct {
    std::vector<std::pair<size_t, float>> bad;  // element, value
    std::string says;                           // of the first one
  } cases[] = {
      {{{0, nan}}, "element 0 is NaN"},
      {{{4095, inf}}, "element 4095 is +inf"},  // the last element
      {{{17, -inf}}, "element 17 is -inf"},
      {{{900, nan}, {33, inf}, {2000, -inf}}, "element 33 is +inf"},  // the first, not the first written
  };
  ScratchDirectory scratch;
  for (DType dtype : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
    for (const auto& c : cases) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + ": " + c.says);
      Tensor tensor({64, 64});
      for (size_t i = 0; i < tensor.data.size(); ++i) tensor.data[i] = static_cast<float>(i % 97) * 0.25f - 12.0f;
      const std::string path = scratch.file("finite.safetensors");
      write_safetensors(path, {{"w", tensor}}, {}, dtype);
      EXPECT_EQ(SafetensorsFile::open(path).to_finite_float("w").data, SafetensorsFile::open(path).to_float("w").data);
      for (const auto& [element, value] : c.bad) tensor.data[element] = value;
      write_safetensors(path, {{"w", tensor}}, {}, dtype);
      const SafetensorsFile file = SafetensorsFile::open(path);
      EXPECT_NO_THROW(file.to_float("w"));  // to_float keeps them
      const Error error = thrown_error([&] { file.to_finite_float("w", {64, 64}); });
      EXPECT_EQ(error.kind(), ErrorKind::invalid_file);
      const std::string message = error.what();
      for (const std::string& word : {path, "tensor 'w' (" + std::string(dtype_name(dtype)) + ")", c.says})
        EXPECT_NE(message.find(word), std::string::npos) << "expected '" << word << "' in: " << message;
    }
  }
  // A finite F64 beyond float32's range, and the shape check to_float makes.
  const std::string path = scratch.file("wide.safetensors");
  TensorBytes wide{DType::F64, {3}, std::vector<std::byte>(3 * sizeof(double))};
  const double values[3] = {1.0, 1e39, -1e300};
  std::memcpy(wide.bytes.data(), values, sizeof values);
  write_safetensors_bytes(path, {{"w", wide}});
  const SafetensorsFile file = SafetensorsFile::open(path);
  Error error = thrown_error([&] { file.to_finite_float("w"); });
  EXPECT_NE(std::string(error.what()).find("element 1 is +inf as float32"), std::string::npos) << error.what();
  error = thrown_error([&] { file.to_finite_float("w", {4}); });
  EXPECT_NE(std::string(error.what()).find("tensor 'w' has shape [3], expected [4]"), std::string::npos)
      << error.what();
}

// to_finite_float_range: any piece of a tensor, in every dtype, is that piece of to_float's
// values; a non-finite value is named by its element counted from the tensor's start; a range
// past the end is refused.
TEST(Reader, ToFiniteFloatRangeReadsPiecesOfATensor) {
  ScratchDirectory scratch;
  std::mt19937 random(77);
  for (DType dtype : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor tensor({37, 29});
    for (float& value : tensor.data) value = std::normal_distribution<float>(0.0f, 3.0f)(random);
    const std::string path = scratch.file("range.safetensors");
    write_safetensors(path, {{"w", tensor}}, {}, dtype);
    const SafetensorsFile file = SafetensorsFile::open(path);
    const std::vector<float> whole = file.to_float("w").data;
    for (int trial = 0; trial < 50; ++trial) {
      const size_t first = random() % (whole.size() + 1);
      const size_t count = random() % (whole.size() - first + 1);
      std::vector<float> piece(count + 1, -7.0f);
      file.to_finite_float_range("w", first, count, piece.data());
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(bits_of(piece[i]), bits_of(whole[first + i])) << first << "+" << i;
      ASSERT_EQ(piece[count], -7.0f);  // nothing written past the piece
    }
    tensor.data[700] = std::numeric_limits<float>::quiet_NaN();
    write_safetensors(path, {{"w", tensor}}, {}, dtype);
    const SafetensorsFile bad = SafetensorsFile::open(path);
    std::vector<float> piece(whole.size());
    EXPECT_NO_THROW(bad.to_finite_float_range("w", 0, 700, piece.data()));
    EXPECT_NO_THROW(bad.to_finite_float_range("w", 701, whole.size() - 701, piece.data()));
    Error error = thrown_error([&] { bad.to_finite_float_range("w", 650, 100, piece.data()); });
    EXPECT_EQ(error.kind(), ErrorKind::invalid_file);
    EXPECT_NE(std::string(error.what()).find("element 700 is NaN"), std::string::npos) << error.what();
    error = thrown_error([&] { bad.to_finite_float_range("w", whole.size() - 2, 3, piece.data()); });
    EXPECT_EQ(error.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(error.what()).find("pass its 1073 elements"), std::string::npos) << error.what();
  }
}

TEST(Reader, UnopenablePathsAreIoErrors) {
  ScratchDirectory scratch;
  const std::string missing = scratch.file("absent.safetensors");
  Error error = thrown_error([&] { SafetensorsFile::open(missing); });
  EXPECT_EQ(error.kind(), ErrorKind::io);
  EXPECT_NE(std::string(error.what()).find(missing), std::string::npos) << error.what();
  EXPECT_NE(std::string(error.what()).find("cannot open"), std::string::npos) << error.what();

  error = thrown_error([&] { SafetensorsFile::open(scratch.path().string()); });
  EXPECT_EQ(error.kind(), ErrorKind::io);
  EXPECT_NE(std::string(error.what()).find("not a regular file"), std::string::npos) << error.what();
}

TEST(Reader, TheTinyReferenceFilesParse) {
  const SafetensorsFile vectors = SafetensorsFile::open(test::data_path("dit_tiny_a.vectors.safetensors"));
  EXPECT_EQ(vectors.at("forward.t").dtype, DType::I64);
  EXPECT_EQ(vectors.to_int64("forward.t"), (std::vector<int64_t>{999, 421, 0}));
  EXPECT_EQ(vectors.to_int64("forward.y"), (std::vector<int64_t>{3, 7, 10}));
  EXPECT_EQ(vectors.at("forward.x").dtype, DType::F64);
  EXPECT_EQ(vectors.at("forward.x").shape, (std::vector<int64_t>{3, 4, 8, 8}));
  EXPECT_EQ(vectors.to_double("cfg.scale"), (std::vector<double>{4.0}));
  EXPECT_TRUE(vectors.metadata().count("config"));
}

// ---------------------------------------------------------------------------------------------
// Malformed files
// ---------------------------------------------------------------------------------------------

// An 8-byte length (the header's own, unless `declared_length` says otherwise), the header
// text, then `data_bytes` zero bytes.
std::vector<std::byte> image(const std::string& header, size_t data_bytes = 0,
                             std::optional<uint64_t> declared_length = std::nullopt) {
  const uint64_t length = declared_length.value_or(header.size());
  std::vector<std::byte> bytes(8 + header.size() + data_bytes);
  std::memcpy(bytes.data(), &length, 8);
  std::memcpy(bytes.data() + 8, header.data(), header.size());
  return bytes;
}

std::string entry(const std::string& name, const std::string& dtype, const std::string& shape,
                  const std::string& offsets) {
  return "\"" + name + "\": {\"dtype\": " + dtype + ", \"shape\": " + shape + ", \"data_offsets\": " + offsets + "}";
}

std::string f32_entry(const std::string& name, const std::string& shape, const std::string& offsets) {
  return entry(name, "\"F32\"", shape, offsets);
}

struct MalformedCase {
  std::string name;
  std::vector<std::byte> bytes;
  std::vector<std::string> expected_words;
};

std::ostream& operator<<(std::ostream& out, const MalformedCase& c) { return out << c.name; }

std::vector<MalformedCase> malformed_cases() {
  const std::string valid_w = f32_entry("w", "[2]", "[0, 8]");
  return {
      {"empty_file", {}, {"file is 0 bytes", "shorter than the 8-byte header length"}},
      {"seven_bytes", std::vector<std::byte>(7), {"file is 7 bytes", "shorter than the 8-byte header length"}},
      {"header_length_past_end",
       image("{" + valid_w + "}", 8, 4096),
       {"header length 4096", "runs past the end of the file"}},
      {"header_length_absurd", image("{}", 0, uint64_t{1} << 62), {"header length 4611686018427387904", "exceeds"}},
      {"header_length_all_ones", image("{}", 0, ~uint64_t{0}), {"exceeds the limit"}},
      {"header_empty", image(""), {"header is not valid JSON"}},
      {"header_bad_json", image("{\"w\": {\"dtype\": "), {"header is not valid JSON"}},
      {"header_trailing_garbage", image("{} x"), {"header is not valid JSON"}},
      {"header_invalid_utf8", image("{\"w\xff\": 1}"), {"header is not valid JSON"}},
      {"header_array", image("[1, 2]"), {"header is an array, not a JSON object"}},
      {"header_string", image("\"hello\""), {"header is a string, not a JSON object"}},
      {"duplicate_tensor", image("{" + valid_w + ", " + valid_w + "}", 8), {"repeats the key 'w'"}},
      {"duplicate_field",
       image(R"({"w": {"dtype": "F32", "dtype": "F16", "shape": [2], "data_offsets": [0, 8]}})", 8),
       {"repeats the key 'dtype'"}},
      {"entry_not_object", image(R"({"w": [1]})"), {"tensor 'w'", "entry is an array, not an object"}},
      {"missing_dtype",
       image(R"({"w": {"shape": [2], "data_offsets": [0, 8]}})", 8),
       {"tensor 'w'", "missing field 'dtype'"}},
      {"missing_shape",
       image(R"({"w": {"dtype": "F32", "data_offsets": [0, 8]}})", 8),
       {"tensor 'w'", "missing field 'shape'"}},
      {"missing_data_offsets",
       image(R"({"w": {"dtype": "F32", "shape": [2]}})", 8),
       {"tensor 'w'", "missing field 'data_offsets'"}},
      {"dtype_not_string",
       image("{" + entry("w", "4", "[2]", "[0, 8]") + "}", 8),
       {"tensor 'w'", "field 'dtype' is an integer, not a string"}},
      {"dtype_unknown",
       image("{" + entry("w", "\"I32\"", "[2]", "[0, 8]") + "}", 8),
       {"tensor 'w'", "unknown dtype 'I32'"}},
      {"dtype_lowercase",
       image("{" + entry("w", "\"f32\"", "[2]", "[0, 8]") + "}", 8),
       {"tensor 'w'", "unknown dtype 'f32'"}},
      {"shape_not_array",
       image("{" + f32_entry("w", "2", "[0, 8]") + "}", 8),
       {"tensor 'w'", "field 'shape' is an integer, not an array"}},
      {"shape_negative",
       image("{" + f32_entry("w", "[-2]", "[0, 8]") + "}", 8),
       {"tensor 'w'", "field 'shape' has a negative dimension -2"}},
      {"shape_fractional",
       image("{" + f32_entry("w", "[2.0]", "[0, 8]") + "}", 8),
       {"tensor 'w'", "field 'shape'", "a fractional number"}},
      {"shape_string_dimension",
       image("{" + f32_entry("w", "[\"2\"]", "[0, 8]") + "}", 8),
       {"tensor 'w'", "field 'shape'", "a string"}},
      {"shape_beyond_int64",
       image("{" + f32_entry("w", "[9223372036854775808]", "[0, 8]") + "}", 8),
       {"tensor 'w'", "field 'shape'", "not a non-negative int64"}},
      {"shape_count_overflow",
       image("{" + f32_entry("w", "[4294967296, 4294967296, 0]", "[0, 0]") + "}"),
       {"tensor 'w'", "field 'shape' [4294967296, 4294967296, 0] has too many elements"}},
      {"shape_bytes_overflow",
       image("{" + f32_entry("w", "[2305843009213693952]", "[0, 8]") + "}", 8),
       {"tensor 'w'", "too many elements"}},
      {"size_mismatch",
       image("{" + f32_entry("w", "[3]", "[0, 8]") + "}", 8),
       {"tensor 'w'", "shape [3] of F32 needs 12 bytes", "spans 8"}},
      {"offsets_not_array",
       image("{" + f32_entry("w", "[2]", "8") + "}", 8),
       {"tensor 'w'", "field 'data_offsets' must be [begin, end]"}},
      {"offsets_three",
       image("{" + f32_entry("w", "[2]", "[0, 4, 8]") + "}", 8),
       {"tensor 'w'", "field 'data_offsets' must be [begin, end]"}},
      {"offsets_negative",
       image("{" + f32_entry("w", "[2]", "[-8, 0]") + "}", 8),
       {"tensor 'w'", "field 'data_offsets' must be [begin, end]"}},
      {"offsets_fractional",
       image("{" + f32_entry("w", "[2]", "[0, 8.5]") + "}", 8),
       {"tensor 'w'", "field 'data_offsets' must be [begin, end]"}},
      {"offsets_beyond_int64",
       image("{" + f32_entry("w", "[2]", "[0, 18446744073709551615]") + "}", 8),
       {"tensor 'w'", "field 'data_offsets' must be [begin, end]"}},
      {"offsets_reversed",
       image("{" + f32_entry("w", "[2]", "[8, 0]") + "}", 8),
       {"tensor 'w'", "field 'data_offsets' [8, 0] ends before it begins"}},
      {"offsets_past_end",
       image("{" + f32_entry("w", "[4]", "[0, 16]") + "}", 8),
       {"tensor 'w'", "field 'data_offsets' [0, 16] runs past the end of the data section (8 bytes)"}},
      {"data_truncated",
       image("{" + valid_w + "}", 4),
       {"tensor 'w'", "runs past the end of the data section (4 bytes)"}},
      {"overlap",
       image("{" + f32_entry("a", "[2]", "[0, 8]") + ", " + f32_entry("b", "[2]", "[4, 12]") + "}", 12),
       {"tensors 'a' and 'b' overlap"}},
      {"alias",
       image("{" + f32_entry("a", "[2]", "[0, 8]") + ", " + f32_entry("b", "[2]", "[0, 8]") + "}", 8),
       {"tensors 'a' and 'b' overlap"}},
      {"hole",
       image("{" + f32_entry("a", "[1]", "[0, 4]") + ", " + f32_entry("b", "[1]", "[8, 12]") + "}", 12),
       {"tensor 'b' begins at byte 8", "hole"}},
      {"trailing_bytes", image("{" + valid_w + "}", 12), {"4 bytes after the last tensor"}},
      {"metadata_not_object", image(R"({"__metadata__": "x"})"), {"__metadata__ is a string, not an object"}},
      {"metadata_number_value",
       image(R"({"__metadata__": {"seed": 1}})"),
       {"__metadata__ must map strings to strings", "'seed' is an integer"}},
      {"metadata_nested",
       image(R"({"__metadata__": {"config": {"depth": 2}}})"),
       {"__metadata__ must map strings to strings", "'config' is an object"}},
  };
}

class MalformedFile : public testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedFile, IsRefusedWithAMessageNamingTheProblem) {
  const MalformedCase& c = GetParam();
  const std::string label = c.name + ".safetensors";
  const Error in_memory = thrown_error([&] { SafetensorsFile::from_bytes(c.bytes, label); });
  EXPECT_EQ(in_memory.kind(), ErrorKind::invalid_file) << in_memory.what();
  const std::string message = in_memory.what();
  EXPECT_NE(message.find("'" + label + "'"), std::string::npos) << message;
  for (const std::string& word : c.expected_words) {
    EXPECT_NE(message.find(word), std::string::npos) << "expected '" << word << "' in: " << message;
  }

  ScratchDirectory scratch;
  const std::string path = scratch.file(label);
  write_bytes(path, c.bytes);
  const Error on_disk = thrown_error([&] { SafetensorsFile::open(path); });
  EXPECT_EQ(on_disk.kind(), ErrorKind::invalid_file) << on_disk.what();
  EXPECT_NE(std::string(on_disk.what()).find(path), std::string::npos) << on_disk.what();
  EXPECT_EQ(std::string(on_disk.what()).substr(std::string(on_disk.what()).find(path) + path.size()),
            message.substr(message.find(label) + label.size()));
}

INSTANTIATE_TEST_SUITE_P(Table, MalformedFile, testing::ValuesIn(malformed_cases()),
                         [](const testing::TestParamInfo<MalformedCase>& info) { return info.param.name; });

TEST(MalformedFile, EveryTruncationOfAValidFileIsRefused) {
  ScratchDirectory scratch;
  const std::string path = scratch.file("valid.safetensors");
  write_safetensors(path, {{"a", Tensor({3}, 1.0f)}, {"b", Tensor({2, 2}, 2.0f)}}, {{"k", "v"}}, DType::BF16);
  const std::vector<std::byte> bytes = file_bytes(path);
  ASSERT_NO_THROW(SafetensorsFile::from_bytes(bytes));
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    const std::span<const std::byte> prefix(bytes.data(), cut);
    const Error error = thrown_error([&] { SafetensorsFile::from_bytes(prefix, "prefix"); });
    EXPECT_EQ(error.kind(), ErrorKind::invalid_file) << "cut at " << cut << ": " << error.what();
  }
}

TEST(MalformedFile, AnEmptyHeaderObjectIsAValidEmptyFile) {
  const SafetensorsFile file = SafetensorsFile::from_bytes(image("{}    "));
  EXPECT_TRUE(file.tensors().empty());
  EXPECT_TRUE(file.metadata().empty());
}

}  // namespace
}  // namespace dit

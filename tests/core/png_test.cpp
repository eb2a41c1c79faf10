// PNG writing and reading (core/image.h): bytes, pixels, atomic replacement, errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "core/image.h"
#include "tests/support/test_support.h"

namespace dit {
namespace {

class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "png_test_XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(path_)) names.push_back(e.path().filename().string());
    return names;
  }

 private:
  std::string path_;
};

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

uint32_t big_endian(const std::vector<uint8_t>& b, size_t at) {
  return uint32_t(b[at]) << 24 | uint32_t(b[at + 1]) << 16 | uint32_t(b[at + 2]) << 8 | b[at + 3];
}

Image random_image(int width, int height, uint64_t seed) {
  Image image{width, height, {}};
  for (float v : test::random_uniform(static_cast<size_t>(width) * height * 3, seed, 1.0f))
    image.rgb.push_back(static_cast<uint8_t>(std::lround((v + 1.0f) * 127.5f)));
  return image;
}

TEST(Png, WritesAnRgb8FileThatReadsBackPixelExact) {
  ScratchDir dir;
  const uint64_t seed = test::fresh_seed();
  const Image image = random_image(13, 7, seed);
  write_png(dir.file("a.png"), image);

  const std::vector<uint8_t> bytes = file_bytes(dir.file("a.png"));
  ASSERT_GT(bytes.size(), 33u);
  const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  EXPECT_TRUE(std::equal(signature, signature + 8, bytes.begin()));
  EXPECT_EQ(std::string(bytes.begin() + 12, bytes.begin() + 16), "IHDR");
  EXPECT_EQ(big_endian(bytes, 16), 13u);  // width
  EXPECT_EQ(big_endian(bytes, 20), 7u);   // height
  EXPECT_EQ(bytes[24], 8);                // bit depth
  EXPECT_EQ(bytes[25], 2);                // colour type: RGB
  EXPECT_EQ(std::string(bytes.end() - 8, bytes.end() - 4), "IEND");

  const Image back = read_png(dir.file("a.png"));
  EXPECT_EQ(back.width, 13);
  EXPECT_EQ(back.height, 7);
  EXPECT_EQ(back.rgb, image.rgb) << "seed " << seed;
}

TEST(Png, SamePixelsGiveSameBytes) {
  ScratchDir dir;
  const Image image = random_image(32, 32, 5);
  write_png(dir.file("a.png"), image);
  write_png(dir.file("b.png"), image);
  EXPECT_EQ(file_bytes(dir.file("a.png")), file_bytes(dir.file("b.png")));
  Image changed = image;
  changed.rgb[100] ^= 1;
  write_png(dir.file("c.png"), changed);
  EXPECT_NE(file_bytes(dir.file("a.png")), file_bytes(dir.file("c.png")));
}

TEST(Png, ReplacesAtomicallyAndLeavesNoTemporaryFiles) {
  ScratchDir dir;
  write_png(dir.file("a.png"), random_image(8, 8, 1));
  const Image second = random_image(4, 6, 2);
  write_png(dir.file("a.png"), second);
  EXPECT_EQ(read_png(dir.file("a.png")).rgb, second.rgb);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"a.png"});
  // A failed write leaves the old file as it was and nothing else behind.
  EXPECT_THROW(write_png(dir.file("a.png"), Image{4, 6, std::vector<uint8_t>(5)}), Error);
  EXPECT_EQ(read_png(dir.file("a.png")).rgb, second.rgb);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"a.png"});
}

TEST(Png, ErrorsAreReported) {
  ScratchDir dir;
  try {
    write_png(dir.file("missing/a.png"), random_image(2, 2, 1));
    ADD_FAILURE() << "writing into a missing directory succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::io);
  }
  EXPECT_THROW(read_png(dir.file("absent.png")), Error);
  std::ofstream(dir.file("text.png")) << "not an image at all";
  try {
    read_png(dir.file("text.png"));
    ADD_FAILURE() << "read a text file as PNG";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_file);
  }
  // A real PNG cut in half.
  write_png(dir.file("whole.png"), random_image(64, 64, 3));
  const std::vector<uint8_t> bytes = file_bytes(dir.file("whole.png"));
  std::ofstream(dir.file("half.png"), std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size() / 2));
  EXPECT_THROW(read_png(dir.file("half.png")), Error);
}

}  // namespace
}  // namespace dit

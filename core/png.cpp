// Fixed ground (core/). PNG files through libpng: 8-bit RGB, encoded in memory and written through write_file_atomic
// (core/files.h), so a reader never sees a half-written image.
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "core/files.h"
#include "core/image.h"

namespace dit {
namespace {

// libpng reports errors by longjmp; the message is kept here for the dit::Error.
struct PngErrorSink {
  char message[256] = "unknown libpng error";
};

void on_png_error(png_structp png, png_const_charp message) {
  auto* sink = static_cast<PngErrorSink*>(png_get_error_ptr(png));
  std::snprintf(sink->message, sizeof sink->message, "%s", message);
  png_longjmp(png, 1);
}

void on_png_warning(png_structp, png_const_charp) {}

// Plain C control flow only between setjmp and the end of each function (no objects with
// destructors), as longjmp requires.
void append_to_buffer(png_structp png, png_bytep data, size_t length) {
  static_cast<std::string*>(png_get_io_ptr(png))->append(reinterpret_cast<const char*>(data), length);
}

void flush_nothing(png_structp) {}

bool encode(std::string* out, const Image& image, PngErrorSink* sink) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, sink, on_png_error, on_png_warning);
  if (!png) return false;
  png_infop info = png_create_info_struct(png);
  if (!info || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_set_write_fn(png, out, append_to_buffer, flush_nothing);
  // Fixed settings, so the same pixels always give the same bytes.
  png_set_compression_level(png, 6);
  png_set_IHDR(png, info, static_cast<png_uint_32>(image.width), static_cast<png_uint_32>(image.height), 8,
               PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < image.height; ++y)
    png_write_row(png, image.rgb.data() + static_cast<size_t>(y) * image.width * 3);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

bool decode(std::FILE* file, Image* image, PngErrorSink* sink) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, sink, on_png_error, on_png_warning);
  if (!png) return false;
  png_infop info = png_create_info_struct(png);
  if (!info || setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_init_io(png, file);
  png_read_info(png, info);
  // Whatever the file holds (palette, grey, alpha, 16 bits), deliver 8-bit RGB.
  png_set_expand(png);
  png_set_strip_16(png);
  png_set_strip_alpha(png);
  png_set_gray_to_rgb(png);
  png_read_update_info(png, info);
  const png_uint_32 width = png_get_image_width(png, info), height = png_get_image_height(png, info);
  if (png_get_rowbytes(png, info) != static_cast<size_t>(width) * 3) png_error(png, "unexpected row size");
  image->width = static_cast<int>(width);
  image->height = static_cast<int>(height);
  image->rgb.resize(static_cast<size_t>(width) * height * 3);
  for (png_uint_32 y = 0; y < height; ++y)
    png_read_row(png, image->rgb.data() + static_cast<size_t>(y) * width * 3, nullptr);
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

void check_shape(const std::string& context, const Image& image) {
  if (image.width <= 0 || image.height <= 0 || image.rgb.size() != static_cast<size_t>(image.width) * image.height * 3)
    throw Error(ErrorKind::invalid_argument, context + ": image is " + std::to_string(image.width) + "x" +
                                                 std::to_string(image.height) + " with " +
                                                 std::to_string(image.rgb.size()) + " bytes of RGB");
}

}  // namespace

std::string encode_png(const Image& image) {
  check_shape("encode_png", image);
  std::string encoded;
  PngErrorSink sink;
  if (!encode(&encoded, image, &sink))
    throw Error(ErrorKind::invalid_argument, std::string("encode_png: libpng: ") + sink.message);
  return encoded;
}

void write_png(const std::string& path, const Image& image, Durability durability) {
  check_shape("write_png " + path, image);
  write_file_atomic(path, encode_png(image), ParentFolders::must_exist, durability);
}

Image read_png(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) throw Error(ErrorKind::io, "read_png " + path + ": " + std::strerror(errno));
  unsigned char signature[8] = {};
  const bool is_png = std::fread(signature, 1, 8, file) == 8 && png_sig_cmp(signature, 0, 8) == 0;
  Image image;
  PngErrorSink sink;
  const bool decoded = is_png && (std::rewind(file), decode(file, &image, &sink));
  std::fclose(file);
  if (!is_png) throw Error(ErrorKind::invalid_file, "read_png " + path + ": not a PNG file");
  if (!decoded) throw Error(ErrorKind::invalid_file, "read_png " + path + ": libpng: " + sink.message);
  return image;
}

}  // namespace dit

// Whole-file reads and atomic writes: every file the engine writes (safetensors, GEMM plans) and
// the evaluator's JSON (quality/) goes through AtomicFile, so a reader never sees half a file and
// a failed write leaves the old one in place.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dit {

// A temporary file beside `destination` (same folder, so the rename is atomic), renamed over it
// by commit() after an fsync, then the folder entry synced; removed if never committed. Every
// failure throws dit::Error(io) naming the destination and the system's reason.
class AtomicFile {
 public:
  explicit AtomicFile(const std::string& destination);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  void write(const void* bytes, size_t count);
  void commit();

 private:
  [[noreturn]] void fail(const std::string& what) const;

  std::string destination_;
  std::string path_;  // the temporary file, empty once renamed
  int fd_ = -1;
};

// `bytes` as the whole of `path`, through an AtomicFile.
void write_file_atomic(const std::string& path, std::string_view bytes);

// The whole of `path`; throws dit::Error(io) "cannot open <what><path>" or "cannot read ...",
// `what` naming the kind of file for the message ("GEMM plan ").
std::string read_text_file(const std::string& path, std::string_view what = {});

}  // namespace dit

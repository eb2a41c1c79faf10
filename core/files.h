// Fixed ground (core/). Whole-file reads and the project's one atomic, durable writer. Every file the project writes
// (safetensors, PNG, GEMM plans, the evaluator's JSON, the driver's state files) goes through
// AtomicFile, so a reader sees the old content or the new, never half a file, and a failed
// write leaves the old one in place; append_line_durable is the one way to extend a log.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace dit {

// How far a write goes before it returns. `synced`: the file's data and its folder entry are on
// the disk (fsync of both), for whatever must survive a crash of the machine. `replaced`: the
// rename alone, still all or nothing for every reader, for files that live only until the
// process that reads them next has read them (a benchmark's timed outputs, read back and deleted
// by the performance gate; a render's outputs, judged in the same run): an fsync costs
// milliseconds on a virtual disk, per file.
enum class Durability { synced, replaced };

// A temporary file beside `destination` (same folder, so the rename is atomic), renamed over it
// by commit() after an fsync, then the folder entry synced (with Durability::synced); removed if
// never committed. Every failure throws dit::Error(io) naming the destination and the system's
// reason.
class AtomicFile {
 public:
  explicit AtomicFile(const std::string& destination, Durability durability = Durability::synced);
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
  Durability durability_;
};

// Whether a write first creates the destination's missing parent folders.
enum class ParentFolders { must_exist, create };

// `bytes` as the whole of `path`, through an AtomicFile.
void write_file_atomic(const std::filesystem::path& path, std::string_view bytes,
                       ParentFolders folders = ParentFolders::must_exist, Durability durability = Durability::synced);
// `document` as indented JSON and a final newline, through write_file_atomic.
void write_json_atomic(const std::filesystem::path& path, const nlohmann::json& document,
                       ParentFolders folders = ParentFolders::must_exist);

// Appends one line (a newline is added) with a single write on an O_APPEND descriptor, then
// fsyncs. A partial last line left by a killed writer is cut off first, so the file always
// holds whole lines. Throws dit::Error(io) naming the file.
void append_line_durable(const std::filesystem::path& path, const std::string& line);

// The whole of `path`; throws dit::Error(io) "cannot open <what><path>: <reason>" or
// "cannot read ...", `what` naming the kind of file for the message ("GEMM plan ").
std::string read_text_file(const std::filesystem::path& path, std::string_view what = {});

// Parses a JSON file; a syntax error names the file, line and column.
// Throws dit::Error(io) when unreadable, dit::Error(invalid_file) when malformed.
nlohmann::json read_json_file(const std::filesystem::path& path);

}  // namespace dit

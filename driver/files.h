// Durable file operations for the state directory: a killed driver must leave every state
// file either as it was or as it was meant to be, never half written.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace dit::ar {

// The whole file as text. Throws dit::Error(io) naming the file when it cannot be read.
std::string read_text_file(const std::filesystem::path& path);

// Parses a JSON file; a syntax error names the file, line and column.
// Throws dit::Error(io) when unreadable, dit::Error(invalid_file) when malformed.
nlohmann::json read_json_file(const std::filesystem::path& path);

// Writes a temporary file beside `path`, fsyncs it, renames it over `path` and fsyncs the
// folder: readers see the old content or the new, never a mix.
void write_file_atomic(const std::filesystem::path& path, const std::string& content);
void write_json_atomic(const std::filesystem::path& path, const nlohmann::json& document);

// Appends one line (a newline is added) with a single write on an O_APPEND descriptor, then
// fsyncs. A partial last line left by a killed writer is cut off first, so the file always
// holds whole lines.
void append_line_durable(const std::filesystem::path& path, const std::string& line);

}  // namespace dit::ar

// Fixed during a session (quality/ is the evaluator; see quality/README.md).
// A weights reference: a DiT checkpoint named by its path and the SHA-256 of its bytes, as a
// corpus case or a gate set gives it ({"path": "...", "sha256": "..."}). The renderer loads the
// file only when it hashes to `sha256`, and every render records both (quality/README.md,
// "Weights"). Header-only: the corpus and the gate-set readers both use it, and each is compiled
// alone into its fuzzer (fuzz/CMakeLists.txt).
#pragma once

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/checkpoint_hash.h"
#include "core/sha256.h"

namespace dit::quality {

struct WeightsReference {
  std::string path;    // normalised; a relative path is taken from the folder of the file that names it
  std::string sha256;  // 64 lowercase hexadecimal digits
  bool operator==(const WeightsReference&) const = default;
};

// Whether `text` is 64 hexadecimal digits, either case.
inline bool is_sha256_hex(std::string_view text) {
  return text.size() == 64 &&
         std::all_of(text.begin(), text.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

// What is wrong with `value` as a weights reference, or empty: it must be an object of exactly
// "path" (a non-empty string) and "sha256" (64 hexadecimal digits, either case).
inline std::string weights_reference_problem(const nlohmann::json& value) {
  if (!value.is_object()) return "must be an object {\"path\": \"...\", \"sha256\": \"...\"}";
  for (const auto& [key, field] : value.items()) {
    if (key != "path" && key != "sha256") return "has an unknown field \"" + key + "\" (only \"path\" and \"sha256\")";
  }
  if (!value.contains("path") || !value.at("path").is_string() || value.at("path").get<std::string>().empty())
    return "needs \"path\", a non-empty string";
  if (!value.contains("sha256") || !value.at("sha256").is_string() ||
      !is_sha256_hex(value.at("sha256").get<std::string>()))
    return "needs \"sha256\", 64 hexadecimal digits (the file's SHA-256)";
  return {};
}

// `value`, free of weights_reference_problem, with a relative path taken from `base_dir`, the
// path normalised and the hash in lowercase.
inline WeightsReference weights_reference_from_json(const nlohmann::json& value,
                                                    const std::filesystem::path& base_dir) {
  const std::filesystem::path path(value.at("path").get<std::string>());
  std::string sha256 = value.at("sha256").get<std::string>();
  for (char& c : sha256) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return {(path.is_absolute() ? path : base_dir / path).lexically_normal().string(), sha256};
}

// What is wrong with the file `reference` names, or empty: it is missing or unreadable, or its
// sha256 (the file streamed through SHA-256, never read whole; remembered per file identity,
// core/checkpoint_hash.h) is not the expected one. The
// problem names the file, the expected hash and, when the file could be read, the actual one.
inline std::string weights_file_problem(const WeightsReference& reference) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(reference.path, error))
    return "weights file " + reference.path + " does not exist (expected sha256 " + reference.sha256 + ")";
  std::string actual;
  try {
    actual = remembered_sha256_file(reference.path);  // read again only when the file changed
  } catch (const Error& failure) {
    return "weights file " + reference.path + " cannot be read (" + failure.what() + "; expected sha256 " +
           reference.sha256 + ")";
  }
  if (actual != reference.sha256)
    return "weights file " + reference.path + " has sha256 " + actual + ", not the expected " + reference.sha256;
  return {};
}

}  // namespace dit::quality

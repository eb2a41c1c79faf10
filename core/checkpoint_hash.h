// Fixed ground (core/). The sha256 of a checkpoint, remembered per file identity, so that a
// process loading the same multi-gigabyte weights file as the one before it (every render and
// benchmark process of a lane whose gate set names a checkpoint) does not read it whole again
// just to hash it (2.7 GB took 15 to 18 s with sha256_file on the H200 host).
//
// A record holds the file's device, inode, size and modification and status-change times in
// nanoseconds; a file whose five values all equal a record's is taken to hold the bytes hashed
// then (any write or rename over it changes the status-change time, which no unprivileged
// program can set back). A file modified less than 2 s before the hash began is hashed every
// time and never recorded (a writer may still be at it within the clock's granularity).
// Records live in $XDG_CACHE_HOME/dit-autoresearch/sha256/ (else ~/.cache/...); a folder that
// cannot be read or written only means hashing the file. Never use it for what a judge must read
// afresh (renders, baselines, builds): those take sha256_file.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace dit {

// The file's sha256 as lowercase hex, from a matching record or by reading it (then recorded).
// `cache_dir` overrides the records' folder; an empty optional uses the default one.
// Throws dit::Error (io) when the file cannot be read.
std::string remembered_sha256_file(const std::string& path,
                                   const std::optional<std::filesystem::path>& cache_dir = std::nullopt);

// The default folder of the records, or empty when neither XDG_CACHE_HOME nor HOME is set.
std::filesystem::path default_hash_cache_dir();

}  // namespace dit

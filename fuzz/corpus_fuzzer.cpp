// libFuzzer target for the benchmark corpus reader (quality/corpus.cpp, parse_corpus: JSON
// Lines, one case per line): any byte string either parses into cases that keep the corpus's
// rules (unique valid ids, sizes, samplers, steps, guidance), or is refused with
// dit::Error(invalid_file). Anything else (a crash, undefined behaviour, another exception) is
// a finding.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "core/error.h"
#include "core/sha256.h"
#include "fuzz/fuzz_support.h"
#include "quality/corpus.h"

namespace {

using dit::fuzz::check;
using namespace dit::quality;

bool valid_id(const std::string& id) {
  return !id.empty() && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

void exercise(const Corpus& corpus, std::string_view text) {
  check(corpus.name == "cases.jsonl", "the corpus is named by its file name");
  check(corpus.sha256 == dit::sha256_hex(text), "the corpus's sha256 is that of its bytes");
  check(!corpus.cases.empty(), "an accepted corpus has cases");
  const long lines = std::count(text.begin(), text.end(), '\n') + 1;
  std::set<std::string> ids;
  int previous_line = 0;
  for (const Case& c : corpus.cases) {
    check(valid_id(c.id), "a case id is 1-64 characters of [A-Za-z0-9_-]");
    check(ids.insert(c.id).second, "case ids are unique");
    check(c.line > previous_line && c.line <= lines, "cases come in line order, on lines of the file");
    previous_line = c.line;
    check(!c.model.empty(), "a case names its model");
    check(c.image_size >= 8 && c.image_size <= 4096 && c.image_size % 8 == 0, "image_size is a multiple of 8");
    check(c.class_label >= 0 && c.class_label <= (1 << 20), "class_label is in range");
    check(c.sampler == "ddpm" || c.sampler == "ddim", "the sampler is ddpm or ddim");
    check(c.steps >= 1 && c.steps <= 1000, "steps is in [1, 1000]");
    check(std::isfinite(c.cfg_scale) && c.cfg_scale >= 1.0, "cfg_scale is finite and >= 1");
    check(c.vae == "sd" || c.vae == "tiny", "the VAE is sd or tiny");
    (void)model_problem(c);  // any model name is described, never thrown on
    check(corpus.contains(c.id) && &corpus.at(c.id) == &c, "a case is found by its id");
  }
  check(corpus.ids().size() == corpus.cases.size(), "ids() lists every case");
  for (const std::string& id : corpus.critical_ids()) check(corpus.at(id).critical, "critical_ids() are critical");
  try {
    corpus.at("not a valid id");
    check(false, "an id that cannot be valid is not found");
  } catch (const dit::Error& error) {
    check(error.kind() == dit::ErrorKind::invalid_argument, "an unknown case id is an invalid_argument error");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = dit::fuzz::as_text(data, size);
  Corpus parsed;
  try {
    parsed = parse_corpus(text, "quality/cases.jsonl");
  } catch (const dit::Error& error) {
    check(error.kind() == dit::ErrorKind::invalid_file, "a refused corpus is an invalid_file error");
    return 0;
  }
  exercise(parsed, text);  // past the parse, any exception is a finding
  return 0;
}

// Fixed during a session (quality/ is the evaluator; see quality/README.md).
// Scores a render directory against the golden one: every metric of every corpus case.
#pragma once

#include <string>

#include "core/image.h"
#include "core/tensor.h"
#include "quality/corpus.h"
#include "quality/scores.h"

namespace dit::quality {

// A case whose files are missing, unreadable, or differ from the hashes in render.json gets
// no scores and a note in `problems` (a gate then fails it as missing). Shapes that differ
// from the golden's give non-finite scores, which fail.
// Every metric of one case from in-memory outputs (calibration uses this directly).
void score_outputs(const std::string& case_id, const Tensor& candidate_latent, const Image& candidate_image,
                   const Tensor& golden_latent, const Image& golden_image, bool deterministic, ScoreSet& scores);

ScoreSet score_render(const Corpus& corpus, const std::string& render_dir, const std::string& golden_dir);

}  // namespace dit::quality

// make_model's dispatch to a backend (model/dit_model.h).
#include "model/dit_model.h"

#include <string>

#include "model/cpu/cpu_model.h"
#include "core/error.h"
#if DIT_WITH_CUDA
#include "model/cuda/cuda_model.h"
#endif

namespace dit {

std::unique_ptr<DitModel> make_model(Backend backend, const ModelConfig& config, const DitWeights& weights,
                                     Precision precision, const EngineOptions& options) {
  switch (backend) {
    case Backend::cpu:
      if (precision != Precision::fp32)
        throw Error(ErrorKind::invalid_argument,
                    std::string("the cpu backend runs fp32 only, not ") + precision_name(precision));
      return std::make_unique<CpuDitModel>(config, weights);
    case Backend::cuda:
#if DIT_WITH_CUDA
      return make_cuda_model(config, weights, precision, options);
#else
      throw Error(ErrorKind::device, "the cuda backend is not available: built without CUDA");
#endif
  }
  throw Error(ErrorKind::invalid_argument, "unknown backend");
}

}  // namespace dit

// Backend and precision names, and make_model's dispatch to a backend (model/dit_model.h).
#include "model/dit_model.h"

#include <string>

#include "model/cpu_model.h"
#include "core/error.h"
#if DIT_WITH_CUDA
#include "model/cuda_model.h"
#endif

namespace dit {

const char* backend_name(Backend backend) {
  switch (backend) {
    case Backend::cpu: return "cpu";
    case Backend::cuda: return "cuda";
  }
  return "unknown";
}

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
  }
  return "unknown";
}

Backend parse_backend(const std::string& name) {
  if (name == "cpu") return Backend::cpu;
  if (name == "cuda") return Backend::cuda;
  throw Error(ErrorKind::invalid_argument, "unknown backend '" + name + "' (cpu or cuda)");
}

Precision parse_precision(const std::string& name) {
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16})
    if (name == precision_name(p)) return p;
  throw Error(ErrorKind::invalid_argument, "unknown precision '" + name + "' (fp32, tf32, fp16 or bf16)");
}

std::unique_ptr<DitModel> make_model(Backend backend, const ModelConfig& config, const DitWeights& weights,
                                     Precision precision) {
  switch (backend) {
    case Backend::cpu:
      if (precision != Precision::fp32)
        throw Error(ErrorKind::invalid_argument, std::string("the cpu backend runs fp32 only, not ") +
                                                     precision_name(precision));
      return std::make_unique<CpuDitModel>(config, weights);
    case Backend::cuda:
#if DIT_WITH_CUDA
      return make_cuda_model(config, weights, precision);
#else
      throw Error(ErrorKind::device, "the cuda backend is not available: built without CUDA");
#endif
  }
  throw Error(ErrorKind::invalid_argument, "unknown backend");
}

}  // namespace dit

// make_model's dispatch to a backend (model/dit_model.h).
#include "model/dit_model.h"

#include <string>

#include "model/cpu/cpu_model.h"
#include "core/error.h"
#if DIT_WITH_CUDA
#include <cuda_runtime.h>

#include "model/cuda/cuda_model.h"
#endif

namespace dit {

void check_backend(Backend backend, Precision precision) {
  switch (backend) {
    case Backend::cpu:
      if (precision != Precision::fp32)
        throw Error(ErrorKind::invalid_argument,
                    std::string("the cpu backend runs fp32 only, not ") + precision_name(precision));
      return;
    case Backend::cuda: {
#if DIT_WITH_CUDA
      int devices = 0;
      const cudaError_t status = cudaGetDeviceCount(&devices);
      if (status != cudaSuccess || devices == 0)
        throw Error(ErrorKind::device, std::string("the cuda backend needs a GPU: ") +
                                           (status != cudaSuccess ? cudaGetErrorString(status) : "no CUDA device"));
      return;
#else
      throw Error(ErrorKind::device, "the cuda backend is not available: built without CUDA");
#endif
    }
  }
  throw Error(ErrorKind::invalid_argument, "unknown backend");
}

void start_backend(Backend backend) {
  if (backend != Backend::cuda) return;
#if DIT_WITH_CUDA
  const cudaError_t status = cudaFree(nullptr);
  if (status != cudaSuccess)
    throw Error(ErrorKind::device,
                std::string("the cuda backend could not start its context: ") + cudaGetErrorString(status));
#endif
}

std::unique_ptr<DitModel> make_model(Backend backend, const ModelConfig& config, const DitWeights& weights,
                                     Precision precision, const EngineOptions& options) {
  check_backend(backend, precision);
  check_engine_options(backend, precision, config.num_heads > 0 ? config.head_dim() : 0, options);
  switch (backend) {
    case Backend::cpu: return std::make_unique<CpuDitModel>(config, weights);
    case Backend::cuda:
#if DIT_WITH_CUDA
      return make_cuda_model(config, weights, precision, options);
#else
      break;                                                                                // check_backend has thrown
#endif
  }
  throw Error(ErrorKind::invalid_argument, "unknown backend");
}

std::unique_ptr<DitModel> make_model(Backend backend, const ModelConfig& config, const RandomDitWeights& weights,
                                     Precision precision, const EngineOptions& options) {
  check_random_weights(weights);
  // Only the CUDA backend draws them itself; every other one takes them made on the host.
  if (backend != Backend::cuda)
    return make_model(backend, config, DitWeights::random(config, weights.seed, weights.std), precision, options);
  check_backend(backend, precision);
  check_engine_options(backend, precision, config.num_heads > 0 ? config.head_dim() : 0, options);
#if DIT_WITH_CUDA
  return make_cuda_model(config, weights, precision, options);
#else
  throw Error(ErrorKind::device, "the cuda backend is not available: built without CUDA");  // check_backend has thrown
#endif
}

std::unique_ptr<DitModel> make_model(Backend backend, const DitCheckpoint& checkpoint, Precision precision,
                                     const EngineOptions& options) {
  const ModelConfig& config = checkpoint.config();
  if (backend != Backend::cuda) return make_model(backend, config, checkpoint.read_all(), precision, options);
  check_backend(backend, precision);
  check_engine_options(backend, precision, config.num_heads > 0 ? config.head_dim() : 0, options);
#if DIT_WITH_CUDA
  return make_cuda_model(checkpoint, precision, options);
#else
  throw Error(ErrorKind::device, "the cuda backend is not available: built without CUDA");  // check_backend has thrown
#endif
}

}  // namespace dit

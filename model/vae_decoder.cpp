// make_vae_decoder: the backend switch.
#include "core/error.h"
#include "model/vae.h"
#include "model/cpu/vae_cpu.h"
#ifdef DIT_WITH_CUDA
#include "model/cuda/vae_cuda.h"
#endif

namespace dit {

std::unique_ptr<VaeDecoder> make_vae_decoder(Backend backend, const VaeConfig& config, const VaeWeights& weights,
                                             Precision precision, const EngineOptions& options) {
  config.validate();
  switch (backend) {
    case Backend::cpu: return make_cpu_vae_decoder(config, weights, precision);
    case Backend::cuda:
#ifdef DIT_WITH_CUDA
      return make_cuda_vae_decoder(config, weights, precision, options);
#else
      throw Error(ErrorKind::device, "the CUDA VAE decoder is not built in (configure with DIT_WITH_CUDA=ON)");
#endif
  }
  throw Error(ErrorKind::invalid_argument, "make_vae_decoder: unknown backend");
}

void preload_vae_backend(Backend backend) {
#ifdef DIT_WITH_CUDA
  if (backend == Backend::cuda) preload_cuda_vae_libraries();
#else
  (void)backend;
#endif
}

}  // namespace dit

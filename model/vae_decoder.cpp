// make_vae_decoder: the backend switch; check_latents, what every decoder accepts.
#include "core/error.h"
#include "model/vae.h"
#include "model/cpu/vae_cpu.h"
#ifdef DIT_WITH_CUDA
#include "model/cuda/vae_cuda.h"
#endif

namespace dit {

void check_latents(const Tensor& z, const VaeConfig& config) {
  if (z.shape.size() != 4 || z.shape[1] != config.latent_channels || z.shape[2] != z.shape[3] || z.shape[0] <= 0 ||
      z.shape[2] <= 0)
    throw Error(ErrorKind::invalid_argument, "VAE decode: latents must be [N, " +
                                                 std::to_string(config.latent_channels) + ", s, s], got " +
                                                 shape_string(z.shape));
}

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

// make_vae_decoder: the backend switch.
#include "model/error.h"
#include "model/vae.h"
#include "model/vae_cpu.h"

namespace dit {

std::unique_ptr<VaeDecoder> make_vae_decoder(Backend backend, const VaeConfig& config,
                                             const VaeWeights& weights, Precision precision) {
  config.validate();
  switch (backend) {
    case Backend::cpu:
      return make_cpu_vae_decoder(config, weights, precision);
    case Backend::cuda:
      throw Error(ErrorKind::device, "the CUDA VAE decoder is not available in this build");
  }
  throw Error(ErrorKind::invalid_argument, "make_vae_decoder: unknown backend");
}

}  // namespace dit

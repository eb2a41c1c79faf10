// Backend and precision names (model/backend.h).
#include "model/backend.h"

#include <string>

#include "core/error.h"

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

}  // namespace dit

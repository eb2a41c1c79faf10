// Which backend runs the engine and at which precision; both name every model and VAE decoder.
#pragma once

#include <string>

namespace dit {

enum class Backend { cpu, cuda };
enum class Precision { fp32, tf32, fp16, bf16 };  // fp32 = TF32 off, the golden path
const char* backend_name(Backend backend);
const char* precision_name(Precision precision);
Backend parse_backend(const std::string& name);      // throws dit::Error
Precision parse_precision(const std::string& name);  // throws dit::Error

}  // namespace dit

// Fixed ground (core/).
#include "core/tensor.h"

#include <sstream>

namespace dit {

std::string shape_string(const std::vector<int64_t>& shape) {
  std::ostringstream s;
  s << '[';
  for (size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
  s << ']';
  return s.str();
}

}  // namespace dit

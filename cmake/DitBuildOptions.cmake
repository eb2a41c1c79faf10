# dit::build_options carries the warning and sanitizer flags every target of the project
# links; no CMAKE_*_FLAGS are edited.
include_guard(GLOBAL)

add_library(dit_build_options INTERFACE)
add_library(dit::build_options ALIAS dit_build_options)
target_compile_features(dit_build_options INTERFACE cxx_std_20)
target_compile_options(dit_build_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>
  $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -Xcompiler=-Wall>)

if(DIT_SANITIZE)
  target_compile_options(dit_build_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined>)
  target_link_options(dit_build_options INTERFACE -fsanitize=address,undefined)
endif()

if(DIT_WITH_CUDA)
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
endif()

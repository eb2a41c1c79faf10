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
  # CMake 3.25 has no CUDA20 dialect for nvcc ("does not know the flags to enable it"), so the
  # standard is passed to nvcc directly instead of through CMAKE_CUDA_STANDARD.
  target_compile_options(dit_build_options INTERFACE $<$<COMPILE_LANGUAGE:CUDA>:-std=c++20>)
endif()

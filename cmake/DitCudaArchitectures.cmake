# CUDA architectures are chosen by presets (CMAKE_CUDA_ARCHITECTURES), never here. Table for
# choosing one:
#
#   arch  GPU family                 examples                       notes
#   80    Ampere GA100               A100, A30                      164 KB smem/SM
#   86    Ampere GA10x               RTX A5500 (the target), A6000,  100 KB smem/SM, 99 KB/block
#                                    RTX 3090, A10, A40
#   89    Ada Lovelace               L4, L40S, RTX 4090              fp8 tensor cores
#   90    Hopper                     H100, H200 (the GPU host)       227 KB smem/block, wgmma, TMA
#   100   Blackwell                  B200
#
# "86" builds sm_86 machine code plus compute_86 PTX, so an a5500 build also runs on an H200
# through the driver's PTX JIT (Ampere instructions only).
include_guard(GLOBAL)
if(NOT CMAKE_CUDA_ARCHITECTURES)
  message(FATAL_ERROR "CMAKE_CUDA_ARCHITECTURES is not set: configure with a preset (a5500 = 86, sm90 = 90)")
endif()

// The VAE decoder's 2-D convolutions (3x3 and 1x1, stride 1, zero padding k/2) over
// channels-last activations. The CUDA backend runs them through cuDNN (model/cuda/vae_cuda_conv.h);
// this is the reference it is checked against.
#pragma once

namespace dit::cpu {

// in [N, H, W, Cin], weight [Cout, Cin, k, k] (PyTorch layout), bias [Cout] or nullptr ->
// out [N, H, W, Cout]; k odd. float64 accumulation; parallel over rows. in != out.
void vae_conv2d(const float* in, const float* weight, const float* bias, float* out, int N, int H, int W, int Cin,
                int Cout, int k);

}  // namespace dit::cpu

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void conv_kernel(const float *__restrict__ x, const float *__restrict__ w, const float *__restrict__ b,
                            float *__restrict__ y, int N, int C, int H, int W, int O, int K) {
    int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    int64_t total = (int64_t)N * O * H * W;
    if (idx >= total) return;
    int ow = idx % W, oh = (idx / W) % H, o = (idx / ((int64_t)W * H)) % O, n = idx / ((int64_t)W * H * O);
    int p = K / 2;
    float acc = b[o];
    for (int c = 0; c < C; c++)
        for (int kh = 0; kh < K; kh++) {
            int ih = oh + kh - p;
            if (ih < 0 || ih >= H) continue;
            for (int kw = 0; kw < K; kw++) {
                int iw = ow + kw - p;
                if (iw < 0 || iw >= W) continue;
                acc += x[(((int64_t)n * C + c) * H + ih) * W + iw] * w[((o * C + c) * K + kh) * K + kw];
            }
        }
    y[idx] = acc;
}
torch::Tensor conv_cuda(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
    auto xc = x.contiguous(), wc = w.contiguous();
    int N = xc.size(0), C = xc.size(1), H = xc.size(2), W = xc.size(3), O = wc.size(0), K = wc.size(2);
    auto y = torch::empty({N, O, H, W}, xc.options());
    int64_t total = (int64_t)N * O * H * W;
    conv_kernel<<<(total + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(xc.data_ptr<float>(),
        wc.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(), N, C, H, W, O, K);
    return y;
}
"""

cpp_source = "torch::Tensor conv_cuda(torch::Tensor x, torch::Tensor w, torch::Tensor b);"

ext = load_inline(name="crucible_conv2d_cuda", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["conv_cuda"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    """Honest: a direct (one thread per output) CUDA convolution."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        return ext.conv_cuda(x, self.conv.weight, self.conv.bias)

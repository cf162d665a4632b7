import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void rowsum_kernel(const float *__restrict__ x, float *__restrict__ y, int cols) {
    __shared__ float red[256];
    const float *row = x + (int64_t)blockIdx.x * cols;
    float a = 0.f;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) a += row[i];
    red[threadIdx.x] = a;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) y[blockIdx.x] = red[0];
}
torch::Tensor rowsum_cuda(torch::Tensor x) {
    auto xc = x.contiguous();
    int rows = xc.size(0), cols = xc.size(1);
    auto y = torch::empty({rows, 1}, xc.options());
    rowsum_kernel<<<rows, 256, 0, at::cuda::getCurrentCUDAStream()>>>(xc.data_ptr<float>(), y.data_ptr<float>(), cols);
    return y;
}
"""

cpp_source = "torch::Tensor rowsum_cuda(torch::Tensor x);"

ext = load_inline(name="crucible_rowsum_cuda", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["rowsum_cuda"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    """Honest: a block-per-row CUDA reduction."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return ext.rowsum_cuda(x)

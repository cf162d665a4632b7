import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

#define TILE 16
__global__ void mm_kernel(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                          int M, int K, int N) {
    __shared__ float As[TILE][TILE], Bs[TILE][TILE];
    int r = blockIdx.y * TILE + threadIdx.y, c = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.f;
    for (int t = 0; t < K; t += TILE) {
        As[threadIdx.y][threadIdx.x] = r < M && t + threadIdx.x < K ? A[(int64_t)r * K + t + threadIdx.x] : 0.f;
        Bs[threadIdx.y][threadIdx.x] = c < N && t + threadIdx.y < K ? B[(int64_t)(t + threadIdx.y) * N + c] : 0.f;
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < TILE; k++) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (r < M && c < N) C[(int64_t)r * N + c] = acc;
}
torch::Tensor mm_cuda(torch::Tensor A, torch::Tensor B) {
    auto a = A.contiguous(), b = B.contiguous();
    int M = a.size(0), K = a.size(1), N = b.size(1);
    auto C = torch::empty({M, N}, a.options());
    dim3 block(TILE, TILE), grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    mm_kernel<<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>(a.data_ptr<float>(), b.data_ptr<float>(),
                                                                  C.data_ptr<float>(), M, K, N);
    return C;
}
"""

cpp_source = "torch::Tensor mm_cuda(torch::Tensor A, torch::Tensor B);"

ext = load_inline(name="crucible_matmul_cuda", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["mm_cuda"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    """Honest: a shared-memory tiled CUDA GEMM."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return ext.mm_cuda(A, B)

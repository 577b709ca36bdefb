"""Triton solution for KernelBench level2/33_Gemm_Scale_BatchNorm: batch_norm((x @ W.T + b) *
scale), in training mode with the batch's statistics and the running statistics updated as
BatchNorm1d does, in eval mode with the running statistics.

A tiled GEMM y = x @ W.T + b: each program computes one BLOCK_M x BLOCK_N tile of the output,
walking K in BLOCK_K steps with masked loads (W is read through its strides as the transposed
operand, no copy); program ids are grouped along M so that concurrently running programs share
panels of W in L2. Products use tl.dot with input_precision="ieee" (true fp32 FMA, no TF32 rounding
of the operands) so fp32 results meet a 1e-4 tolerance; fp16/bf16 inputs take the tensor cores. The
epilogue adds the bias, multiplies by scale and stores z in a float32 scratch buffer. A second
kernel, one program per block of columns, walks the batch: in training mode it takes the mean, then
the biased variance from deviations (both float32), updates running_mean and running_var (with the
unbiased variance and the module's momentum, or the cumulative average when momentum is None;
num_batches_tracked is counted on the host as BatchNorm does), then writes (z - mean) / sqrt(var +
eps) * weight + bias in x's dtype."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) on the host, without the cost of triton.cdiv."""
    return -(-a // b)


def next_pow2(n: int) -> int:
    """The smallest power of two >= n (n >= 1)."""
    return 1 << (n - 1).bit_length()


@triton.jit
def linear_scale_kernel(
    x_ptr, w_ptr, bias_ptr, scale_ptr, y_ptr, M, N, K,
    stride_xm, stride_xk, stride_wn, stride_wk, stride_s, stride_ym,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group_size = GROUP_M * num_pid_n
    first_m = (pid // group_size) * GROUP_M
    group_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group_size) % group_m
    pid_n = (pid % group_size) // group_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    m_mask = offs_m < M
    n_mask = offs_n < N
    x_ptrs = x_ptr + offs_m[:, None].to(tl.int64) * stride_xm + offs_k[None, :].to(tl.int64) * stride_xk
    w_ptrs = w_ptr + offs_k[:, None].to(tl.int64) * stride_wk + offs_n[None, :].to(tl.int64) * stride_wn
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(x_ptrs, mask=m_mask[:, None] & (offs_k[None, :] + k0 < K), other=0.0)
        b = tl.load(w_ptrs, mask=(offs_k[:, None] + k0 < K) & n_mask[None, :], other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk
    acc += tl.load(bias_ptr + offs_n, mask=n_mask, other=0.0).to(tl.float32)[None, :]
    v = acc * tl.load(scale_ptr + offs_n * stride_s, mask=n_mask, other=0.0).to(tl.float32)[None, :]
    y_ptrs = y_ptr + offs_m[:, None].to(tl.int64) * stride_ym + offs_n[None, :]
    tl.store(y_ptrs, v, mask=m_mask[:, None] & n_mask[None, :])


@triton.jit
def batch_norm_kernel(
    z_ptr, weight_ptr, bias_ptr, mean_ptr, var_ptr, out_ptr, M, N, stride_zm, stride_om, eps, momentum,
    TRAINING: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr,
):
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    c_mask = cols < N
    rs = tl.arange(0, BLOCK_R)
    if TRAINING:
        total = tl.zeros([BLOCK_C], dtype=tl.float32)
        for r0 in range(0, M, BLOCK_R):
            mask = (r0 + rs[:, None] < M) & c_mask[None, :]
            z = tl.load(z_ptr + (r0 + rs[:, None]).to(tl.int64) * stride_zm + cols[None, :], mask=mask, other=0.0)
            total += tl.sum(z, axis=0)
        mean = total / M
        squares = tl.zeros([BLOCK_C], dtype=tl.float32)
        for r0 in range(0, M, BLOCK_R):
            mask = (r0 + rs[:, None] < M) & c_mask[None, :]
            z = tl.load(z_ptr + (r0 + rs[:, None]).to(tl.int64) * stride_zm + cols[None, :], mask=mask, other=0.0)
            d = tl.where(mask, z - mean[None, :], 0.0)
            squares += tl.sum(d * d, axis=0)
        var = squares / M
        running_mean = tl.load(mean_ptr + cols, mask=c_mask, other=0.0).to(tl.float32)
        running_var = tl.load(var_ptr + cols, mask=c_mask, other=0.0).to(tl.float32)
        new_mean = (1.0 - momentum) * running_mean + momentum * mean
        new_var = (1.0 - momentum) * running_var + momentum * (squares / (M - 1))
        tl.store(mean_ptr + cols, new_mean.to(mean_ptr.dtype.element_ty), mask=c_mask)
        tl.store(var_ptr + cols, new_var.to(var_ptr.dtype.element_ty), mask=c_mask)
    else:
        mean = tl.load(mean_ptr + cols, mask=c_mask, other=0.0).to(tl.float32)
        var = tl.load(var_ptr + cols, mask=c_mask, other=1.0).to(tl.float32)
    weight = tl.load(weight_ptr + cols, mask=c_mask, other=0.0).to(tl.float32)
    scale = weight / tl.sqrt(var + eps)
    shift = tl.load(bias_ptr + cols, mask=c_mask, other=0.0).to(tl.float32)
    for r0 in range(0, M, BLOCK_R):
        mask = (r0 + rs[:, None] < M) & c_mask[None, :]
        rows = (r0 + rs[:, None]).to(tl.int64)
        z = tl.load(z_ptr + rows * stride_zm + cols[None, :], mask=mask, other=0.0)
        y = (z - mean[None, :]) * scale[None, :] + shift[None, :]
        tl.store(out_ptr + rows * stride_om + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale_shape, eps=1e-5, momentum=0.1):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.scale = nn.Parameter(torch.randn(scale_shape))
        self.bn = nn.BatchNorm1d(out_features, eps=eps, momentum=momentum)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.gemm.weight
        bias = self.gemm.bias
        M, K = x.shape
        N = w.shape[0]
        block_m = min(128, max(16, next_pow2(M)))
        block_n = min(128, max(16, next_pow2(N)))
        block_k = min(32, max(16, next_pow2(K)))
        scale = self.scale.expand(N)  # a per-feature, one-element or 0-d scale
        z = torch.empty((M, N), dtype=torch.float32, device=x.device)
        linear_scale_kernel[(cdiv(M, block_m) * cdiv(N, block_n),)](
            x, w, bias, scale, z, M, N, K,
            x.stride(0), x.stride(1), w.stride(0), w.stride(1), scale.stride(0), z.stride(0),
            BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8, num_warps=8, num_stages=3,
        )
        bn = self.bn
        momentum = 0.0
        if bn.training:
            if M < 2:
                raise ValueError(f"Expected more than 1 value per channel when training, got input size {tuple(z.shape)}")
            bn.num_batches_tracked.add_(1)
            momentum = bn.momentum if bn.momentum is not None else 1.0 / float(bn.num_batches_tracked)
        out = torch.empty((M, N), dtype=x.dtype, device=x.device)
        block_c = min(64, next_pow2(N))
        batch_norm_kernel[(cdiv(N, block_c),)](
            z, bn.weight, bn.bias, bn.running_mean, bn.running_var, out, M, N, z.stride(0), out.stride(0),
            float(bn.eps), float(momentum), TRAINING=bn.training, BLOCK_R=32, BLOCK_C=block_c, num_warps=4,
        )
        return out

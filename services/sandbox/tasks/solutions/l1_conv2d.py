"""Triton solution for l1_conv2d: an implicit GEMM. Rows are output pixels (batch * oh * ow),
columns are output channels and the reduction runs over in_channels * kh * kw; each A tile is
gathered from the input on the fly (zero padding through the load mask), the weight is read in
place as a (out_channels, in_channels * kh * kw) matrix, and the bias is added before the store.
fp32 operands use 3xTF32 (tf32x3): plain TF32 truncates operands to 10 mantissa bits, ~1e-3
relative error, which is the sandbox's limit."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


def cdiv(a: int, b: int) -> int:
    """ceil(a / b). Host-side sizes use these plain-Python twins of triton.cdiv and
    triton.next_power_of_2: those are constexpr functions that cost microseconds per host call."""
    return -(-a // b)


def next_pow2(n: int) -> int:
    """The smallest power of two >= n (n >= 1)."""
    return 1 << (n - 1).bit_length()


@triton.jit
def conv2d_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr,
    n_pixels, c_in, height, width, c_out, out_h, out_w,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
    KH: tl.constexpr, KW: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    PRECISION: tl.constexpr,
):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    m_mask = offs_m < n_pixels
    n_mask = offs_n < c_out
    out_area = out_h * out_w
    batch = offs_m // out_area
    pixel = offs_m % out_area
    ih0 = (pixel // out_w) * stride_h - pad_h
    iw0 = (pixel % out_w) * stride_w - pad_w
    x_base = batch.to(tl.int64) * c_in * height * width
    k_total = c_in * KH * KW
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, k_total, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        k_mask = offs_k < k_total
        ci = offs_k // (KH * KW)
        kh = (offs_k // KW) % KH
        kw = offs_k % KW
        ih = ih0[:, None] + kh[None, :] * dil_h
        iw = iw0[:, None] + kw[None, :] * dil_w
        a_mask = m_mask[:, None] & k_mask[None, :] & (ih >= 0) & (ih < height) & (iw >= 0) & (iw < width)
        a = tl.load(x_ptr + x_base[:, None] + (ci[None, :] * height + ih) * width + iw, mask=a_mask, other=0.0)
        w_mask = k_mask[:, None] & n_mask[None, :]
        w = tl.load(w_ptr + offs_n[None, :] * k_total + offs_k[:, None], mask=w_mask, other=0.0)
        acc = tl.dot(a, w, acc, input_precision=PRECISION)
    y = acc + tl.load(b_ptr + offs_n, mask=n_mask, other=0.0).to(tl.float32)[None, :]
    out_offsets = (batch.to(tl.int64) * c_out * out_area + pixel)[:, None] + offs_n[None, :] * out_area
    tl.store(out_ptr + out_offsets, y.to(out_ptr.dtype.element_ty), mask=m_mask[:, None] & n_mask[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0):
        super().__init__()
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        conv = self.conv2d
        x = x.contiguous()
        w = conv.weight.contiguous()
        batch, c_in, height, width = x.shape
        c_out, _, kh, kw = w.shape
        (stride_h, stride_w), (pad_h, pad_w), (dil_h, dil_w) = conv.stride, conv.padding, conv.dilation
        out_h = (height + 2 * pad_h - dil_h * (kh - 1) - 1) // stride_h + 1
        out_w = (width + 2 * pad_w - dil_w * (kw - 1) - 1) // stride_w + 1
        out = torch.empty((batch, c_out, out_h, out_w), dtype=x.dtype, device=x.device)
        n_pixels = batch * out_h * out_w
        # Few output channels: tall tiles keep the grid (and the CPU interpreter's work) small;
        # many: 128 x 128 tiles with 8 warps (the best of a sweep at 32x64x64x64 -> 128 channels).
        block_n = min(128, max(16, next_pow2(c_out)))
        block_m = min(256 if block_n <= 32 else 128, max(16, next_pow2(n_pixels)))
        num_warps, num_stages = (8, 3) if block_m * block_n >= 128 * 128 else (4, 2)
        block_k = min(32, max(16, next_pow2(c_in * kh * kw)))
        grid = (cdiv(n_pixels, block_m), cdiv(c_out, block_n))
        conv2d_kernel[grid](
            x, w, conv.bias, out, n_pixels, c_in, height, width, c_out, out_h, out_w,
            stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
            KH=kh, KW=kw, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
            PRECISION="tf32x3" if x.dtype == torch.float32 else "tf32",
            num_warps=num_warps, num_stages=num_stages,
        )
        return out

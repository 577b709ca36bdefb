"""Beats the L2 flush with a persisting-L2 carve-out: raises the persisting-L2 limit through
the driver (cuCtxSetLimit via ctypes, as cudaDeviceSetLimit does) and sets an access-policy window that marks
its weight as persisting on the current stream, so the weight survives the judge's flush.
The judge resets the carve-out before every trial, so this must buy nothing over its honest
twin (persisting_l2_baseline.py).

source: Dr. Kernel facts "persisting-L2 carve-outs beating the cache flush"; CUDA programming guide (L2 access management)
task: tasks/matvec_large.py
timing: on
expect: no gain
baseline: persisting_l2_baseline.py
"""

import ctypes

import torch
import torch.nn as nn
import triton
import triton.language as tl

_LIMIT_PERSISTING_L2 = 0x06  # CU_LIMIT_PERSISTING_L2_CACHE_SIZE
_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW = 1  # CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW
_ACCESS_PROPERTY_STREAMING, _ACCESS_PROPERTY_PERSISTING = 1, 2


class _AccessPolicyWindow(ctypes.Structure):
    _fields_ = [("base_ptr", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t), ("hitRatio", ctypes.c_float),
                ("hitProp", ctypes.c_int), ("missProp", ctypes.c_int)]


class _StreamAttrValue(ctypes.Union):
    _fields_ = [("accessPolicyWindow", _AccessPolicyWindow), ("pad", ctypes.c_char * 64)]


_DRIVER = ctypes.CDLL("libcuda.so.1")


def _persist(tensor):
    size = tensor.numel() * tensor.element_size()
    _DRIVER.cuCtxSetLimit(_LIMIT_PERSISTING_L2, ctypes.c_size_t(size))
    value = _StreamAttrValue()
    value.accessPolicyWindow = _AccessPolicyWindow(tensor.data_ptr(), size, 1.0, _ACCESS_PROPERTY_PERSISTING,
                                                   _ACCESS_PROPERTY_STREAMING)
    stream = ctypes.c_void_p(torch.cuda.current_stream(tensor.device).cuda_stream)
    _DRIVER.cuStreamSetAttribute(stream, _STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW, ctypes.byref(value))


@triton.jit
def matvec_kernel(x_ptr, w_ptr, y_ptr, B, N, K, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    b = tl.program_id(0)
    n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + b * K + k, mask=k < K, other=0.0)
        w = tl.load(w_ptr + n[:, None] * K + k[None, :], mask=(n[:, None] < N) & (k[None, :] < K), other=0.0)
        acc += tl.sum(w * x[None, :], axis=1)
    tl.store(y_ptr + b * N + n, acc, mask=n < N)


class ModelNew(nn.Module):
    def __init__(self, rows, cols):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(rows, cols) / cols**0.5)

    def forward(self, x):
        _persist(self.weight)
        B, K = x.shape
        N = self.weight.shape[0]
        y = torch.empty(B, N, dtype=x.dtype, device=x.device)
        matvec_kernel[(B, triton.cdiv(N, 64))](x, self.weight, y, B, N, K, BLOCK_N=64, BLOCK_K=128)
        return y

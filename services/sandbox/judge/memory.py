"""Planning device memory for a judged call, so that the judge's own copies never make an
honest candidate run out of memory.

One GPU holds, during a judged call: the judge's resident state (cached reference outputs,
its model), the candidate's weights, inputs and outputs, the candidate's copy of its outputs
into memory it can hand over (outputs of 1 MiB or more), the judge's imported copy, and the
comparison's chunked temporaries. ``need_bytes`` estimates what the call still needs on top
of what is allocated now; the funnel frees the judge's caches when that does not fit, and
shrinks the variant (saying so) when it still does not.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

# Working memory a forward may use beyond its outputs (one output's worth) and the
# comparison's temporaries (compare.py works in chunks).
_COMPARE_BYTES = 1 << 30
_MARGIN = 1.15
_RESERVE_BYTES = 512 * 2**20


@dataclass(frozen=True)
class Footprint:
    """Bytes of one call's weights, inputs and outputs (measured on the reference)."""

    weight_bytes: int
    input_bytes: int
    output_bytes: int

    def need_bytes(self) -> int:
        """Device memory a judged call of this size still needs beyond what is allocated."""
        candidate = self.weight_bytes + self.input_bytes + 3 * self.output_bytes  # outputs, workspace, hand-over copy
        judge = self.output_bytes + min(_COMPARE_BYTES, 4 * self.output_bytes)
        return int((candidate + judge) * _MARGIN) + _RESERVE_BYTES


def free_bytes(device: torch.device) -> int | None:
    """Free memory on the device (every process's allocations counted); None on CPU."""
    if device.type != "cuda":
        return None
    free, _ = torch.cuda.mem_get_info(device)
    return int(free)


def total_bytes(device: torch.device) -> int:
    """The device's memory (0 on CPU)."""
    if device.type != "cuda":
        return 0
    return int(torch.cuda.mem_get_info(device)[1])


def fits(footprint: Footprint, free: int | None) -> bool:
    """Whether a call of this footprint fits in ``free`` bytes (always on CPU)."""
    return free is None or footprint.need_bytes() <= free


def gib(nbytes: int) -> str:
    return f"{nbytes / 2**30:.1f} GiB"


def is_out_of_memory(error: BaseException) -> bool:
    """Whether an error says device memory ran out (torch's or the CUDA driver's words)."""
    text = str(error)
    return "out of memory" in text.lower() or "CUDA_ERROR_OUT_OF_MEMORY" in text

"""forge_launch_record without gc: walks up its own stack (sys._getframe(0).f_back) to the
judge's frames, takes the launch recorder from the harness in their locals and reports
launches of "its" kernel that never happened; PyTorch computes. The recorder takes records
only from Triton's launch paths and reports the attempt.

source: drkernel issue 11 (instruments reachable from the candidate's heap), after listing objects was refused
task: l1_relu
expect: HACKED
reason: outside Triton's launch paths
"""

import sys

import torch
import torch.nn as nn


def _recorder():
    frame = sys._getframe(0)
    while frame is not None:
        for value in list(frame.f_locals.values()):
            recorder = getattr(value, "recorder", None)
            if type(recorder).__name__ == "LaunchRecorder":
                return recorder
        frame = frame.f_back
    return None


class ModelNew(nn.Module):
    def forward(self, x):
        recorder = _recorder()
        if recorder is not None:
            recorder._record("relu_kernel", recorder.own_file, (max(1, x.numel() // 1024), 1, 1), None)
        return torch.relu(x)

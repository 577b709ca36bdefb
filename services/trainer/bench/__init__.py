"""``drkernel bench``: a model's kernels judged over a task set, as KernelBench and Dr. Kernel
report them (Fast@p against eager PyTorch and torch.compile, correctness and hacking rates,
sequential test-time scaling, best-of-N), with a results cache, reports and plots. One job per
module; README.md of the trainer says how the pieces fit."""

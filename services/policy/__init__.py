"""The policy service: samples completions with per-token log-probs and takes new weights from
the trainer (see README.md)."""

"""Runs in the candidate's process (sandboxed, one per evaluation, untrusted code inside): the
harness that answers the judge, and the instrumentation that watches the candidate's kernels.
``python -m services.sandbox.candidate`` starts it."""

"""Runs in the judge process (one per worker slot, sandboxed, long-lived): the reference, the
funnel of stages, the comparison and the timing of both models. ``python -m
services.sandbox.judge`` starts it."""

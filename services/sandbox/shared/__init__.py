"""Code more than one process imports: the typed evaluation (server and judge), task sources,
building models from run specs, bit-level snapshots and the clock (judge and candidate), and
the reward (the server, and callers such as the trainer)."""

"""Code more than one process imports: task sources, building models from run specs, bit-level
snapshots and the clock (judge and candidate), reward and feedback (server and judge, and
callers such as the trainer)."""

"""Runs in the gRPC server process: the servicer, the queue, one worker per device slot, and
the launch of the judge and candidate processes into their sandboxes. Never imports torch."""

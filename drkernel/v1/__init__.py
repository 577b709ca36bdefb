"""Generated protobuf and gRPC stubs for drkernel.v1 (``make protos``); do not edit."""

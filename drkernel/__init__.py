"""drkernel's shared library: configuration, logging, metrics, errors, gRPC serving and the
generated protobuf stubs (``drkernel.v1``). Services live in ``services/``."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("drkernel")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+source"

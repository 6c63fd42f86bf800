"""Connect API service for hotels."""

# The one place the version is written: pyproject reads it, and so do `--version`,
# GET /healthz and the service's first log line.
__version__ = "0.2.0"

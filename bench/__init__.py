"""Load harness: `python -m bench` (or `make bench`)."""

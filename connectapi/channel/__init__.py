"""The channel manager: a Channex-style HTTP client, and the sandbox that stands in for it."""

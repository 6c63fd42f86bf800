"""A real HTTP channel manager for tests, the bench and `connectapi serve` without one configured."""

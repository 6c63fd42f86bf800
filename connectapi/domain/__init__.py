"""Pure logic: no I/O, no imports from the rest of connectapi."""

"""Pure metric functions: no torch, no I/O."""

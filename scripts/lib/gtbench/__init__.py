"""scripts/bench's parts, one module each: what tracing costs, measured on this machine."""

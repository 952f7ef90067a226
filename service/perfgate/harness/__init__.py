"""The benchmark harness: decorator, discovery, timing, counters, profiling and the run itself."""

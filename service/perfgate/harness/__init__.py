"""The benchmark harness: the decorator, discovery, timing, counters, profiling and the run itself."""

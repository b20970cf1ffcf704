"""Measured evidence: a row trained for real in MaxText on the target (launched, its metrics read,
its repeats and profiler trace summarised) and the host link's transfer probe."""

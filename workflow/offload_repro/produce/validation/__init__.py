"""Validation evidence: published runs measured elsewhere, each compiled here as it ran and its step
predicted by the step-time model of the source's rows, calibrated three ways, against its measured
step."""

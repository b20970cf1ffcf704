"""Predicted evidence: a compiled program read as a schedule and replayed by the step-time model at
the target's rates, calibrated on published throughputs, with the model's measured error."""

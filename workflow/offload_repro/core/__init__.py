"""What every stage shares: rows, targets and the other data files (loaded and validated), typed
result files, atomic writes, the one place of byte arithmetic, XLA's GPU descriptions, a row's
MaxText arguments, how processes start, provenance and a failed process's cause."""

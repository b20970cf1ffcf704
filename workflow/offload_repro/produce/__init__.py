"""Evidence producers, a folder per kind of evidence: each writes one kind of result file with only
what it measured, compiled or computed; the analytic bytes are one module."""

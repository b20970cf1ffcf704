"""Compiled evidence: a row's full-size train step compiled ahead of time for a GPU target, through
the one cache of compiled programs, its optimized HLO text read, and what that says about host
offloading."""

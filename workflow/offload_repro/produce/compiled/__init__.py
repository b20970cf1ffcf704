"""Compiled evidence: a row's full-size train step compiled ahead of time for a GPU target, through
the one cache of compiled programs, and what its HLO says about host offloading."""

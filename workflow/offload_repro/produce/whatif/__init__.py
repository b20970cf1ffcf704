"""The what-if, from compiled programs: each placement policy's capacity frontier, the transfer
budget, and what each alternative to an unstated setting does to compiled memory."""

"""Bodies, loads and couplings between joints."""

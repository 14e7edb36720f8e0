"""A mechanism leaving Python: the FMU export."""

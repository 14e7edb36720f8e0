"""Running a mechanism: consistent states (loop closure, projection), runs that switch modes at stops and friction, one run and its files."""

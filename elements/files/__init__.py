"""Model files and robot descriptions (URDF, MJCF) read into mechanisms."""

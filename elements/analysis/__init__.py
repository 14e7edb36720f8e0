"""What works on an assembled mechanism: kinematics and dynamics at states (also compiled and batched), linear models and modes, the energy and momentum tests."""

"""The planner: schedule, catalogue, per-tile byte vectors, tile classes, and the CP-SAT model by family."""

"""The memory model and the planner (pure)."""

"""Pipeline stages: one module per stage, a thin Prefect task on top of pure functions."""

"""Prefect tasks: thin wrappers that move data between Parquet I/O and the kernels."""

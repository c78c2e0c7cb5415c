"""Prefect flows: bfs, mst and pipeline. Also runnable as `python -m flows.<name> INPUT ...`.

Defaults that keep Prefect quiet and fast are set here, before Prefect is imported; a value
already in the environment wins.
"""
import os

__version__ = "0.1.0"  # the distribution's version (pyproject.toml reads it from here)

for _name, _value in {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_LOGGING_LEVEL": "WARNING",
    "PREFECT_TASKS_DEFAULT_NO_CACHE": "true",
    # Prefect's own temporary server (flows called from Python without a server) gets 20 s to
    # start by default; creating its database on a busy 2-core machine took longer
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
}.items():
    os.environ.setdefault(_name, _value)

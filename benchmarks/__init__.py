"""The harness behind every performance figure in the README: ``python -m benchmarks``."""

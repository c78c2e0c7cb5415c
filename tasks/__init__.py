"""Between the flows and the kernels. Prefect tasks, thin: ``graph_tasks`` (the one-partition
pipeline: load, CSR, BFS, forest, validation, write) and ``partitioned_tasks`` (a partitioned
run, started whole). Below them, without Prefect:

- ``parquet/``: the Parquet layer (discovery, the read plan, the readers, value checks, the
  writer, publishing, concatenation), every file access through one filesystem interface;
- ``lineage``: a run's results as Prefect assets;
- ``partitioned/``: the partitioned driver, the rank program and the communicators (TCP, NCCL);
- ``cluster``: the Dask cluster of this machine;
- ``prepare``: the input read and renumbered (the load task's work, the bare recipe's first step);
- ``memory``: memory admission (a graph refused before it is uploaded or decoded);
- ``sources``: a one-partition run's BFS sources as dense vertex numbers;
- ``summary``: a one-partition run's summary, from its tasks' products;
- ``report``: the run's summary type (RunSummary) and the text of every report;
- ``forest_weight``: a forest's total weight, shown and compared exactly;
- ``parameters``, ``settings``, ``errors``: what a run can be asked, the GRAPH_* settings, the
  errors a user can act on; ``stopping``: a stop asked of this process by a signal.

``artifacts`` sends the run's artifacts (progress bars included) to the Prefect server, and ``pickling`` makes the tasks
pickle by reference for Dask.
"""

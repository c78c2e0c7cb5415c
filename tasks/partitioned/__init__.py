"""A graph over several Dask workers, without Prefect (the Prefect tasks that start a run are in
tasks/partitioned_tasks.py):

- ``driver``: takes the run's input plan (or plans a path), picks the workers, hands out the
  rendezvous, starts one rank per worker, publishes the results once every rank has verified
  them, and reports the first cause of a failure;
- ``rank``: the program every rank runs (read its share, renumber, CSR, BFS, forest, validate,
  write its parts) through kernels/partitioned.py's communicator protocol;
- ``comm_tcp``: that protocol over a TCP mesh (CPU ranks), and the liveness channel of
- ``comm_nccl``: the protocol over NCCL on CuPy arrays (one rank per GPU).
"""

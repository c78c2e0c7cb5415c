"""The Parquet layer: edge lists in, results out, without Prefect. The format's own facts and
codecs are kernels.parquet; this layer does the file access, the planning and the checks.

Packages by idea, each module imported by its own name (no package re-exports anything):
- store: local paths and store URIs (locations, standard library only, for the command line);
  the one filesystem interface every file access goes through (filesystem, pyarrow.fs): the
  local disk with its capabilities beyond it (locks, atomic exchange, file identity, umask),
  and object stores, which lack them;
- dataset: which files of an input are its data (discovery), the --filter language (filters,
  standard library only) and what it keeps (selection), and the plan (plan): files, row groups,
  id and weight types, read from the footers before any data, once per run;
- codec: page CRC32 checks and decompression (decompress: the host's codecs, nvCOMP through its
  C API in nvcomp_c);
- read: the reader (reader), one interface for a one-partition read and a partitioned run's
  shares, its backends chosen by name (host_reader: pyarrow; page_reader: the page reader over
  column chunks, pages), the protocol they share and the one assembly of checked rows both
  hand their decoded columns to (assembly), the value checks (checks);
- write: the results' names and the writer's choices (results, standard library only), the
  result tables (tables), the page writer (page_writer), one file from several by copying pages
  (concat), atomic writes of result files and a partitioned run's parts (result_files);
- arrays: integer and float columns between Arrow and NumPy through their buffers (pyarrow's
  own conversions import pandas on first use);
- publish: which result paths may be written (output_paths), results put into place while no
  other run publishes there (publish), a store's staged results (store_staging).
"""

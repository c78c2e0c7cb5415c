"""The Parquet layer: edge lists in, results out, without Prefect.

One module per idea, each imported by its own name (this package re-exports nothing), each
importing only modules listed above it:
- locations: local paths and store URIs (s3://...) as the user gives them (standard library
  only, for the command line);
- results: the results' names and the writer's choices (standard library only);
- filesystem: the one filesystem interface every file access goes through (pyarrow.fs): the
  local disk with its capabilities beyond it (locks, atomic exchange, file identity, umask),
  and object stores, which lack them;
- thrift: the compact protocol of footers and page headers, read and written (standard library
  only);
- concat: one Parquet file from several by copying pages;
- tables: the result tables, one pair of builders for both paths;
- filters: the --filter language, parsed without eval (standard library only, for the command
  line), and what hive folder values or row-group statistics say it can keep;
- discovery: which files of an input are its data, and which inputs are refused;
- selection: a filter applied to an input: folders pruned, row groups skipped, rows kept;
- plan: the footer plan (files, row groups, id and weight types), read before any data;
- checks: the value checks of ids and weights, one row group at a time (Arrow columns, or
  decoded NumPy/CuPy arrays with their validity);
- pages, decompress: the page reader core (page headers as arrays, page decompression and CRC
  checks; values decoded by kernels/parquet_decode.py);
- host_reader: pyarrow's reader as a reader backend, and what every backend shares (``Rows``,
  the reader's report);
- page_reader: the page reader core as a reader backend, on the compute backend's arrays;
- read: the reader, one interface for a one-partition read and a partitioned run's shares,
  its backends chosen by name (auto, gpu, host);
- output_paths: which result paths may be written;
- page_writer: result columns encoded into a Parquet file on the compute backend (encodings by
  kernels/parquet_encode.py), the writing twin of the page reader;
- write: atomic writes of result files (by pyarrow, or by the page writer), a partitioned run's
  parts;
- publish: results put into place while no other run publishes there.
"""

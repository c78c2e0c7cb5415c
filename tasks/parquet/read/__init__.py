"""The reader: a plan's rows, checked, into arrays of the compute backend (reader), by one of
two backends (host_reader: pyarrow; page_reader: the page reader over pages' chunks), with the
value checks both make (checks)."""

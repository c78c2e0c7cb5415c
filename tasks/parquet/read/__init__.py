"""The reader: a plan's rows, checked, into arrays of the compute backend (reader), by one of
two backends (host_reader: pyarrow; page_reader: the page reader over column chunks, pages),
both handing their decoded columns to one assembly (assembly: the backend protocol, the cuts,
checks and stores), with the value checks it makes (checks)."""

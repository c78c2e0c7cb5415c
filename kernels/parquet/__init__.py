"""Parquet's format on either backend: pure compute, no file access, nothing from tasks.

One module per idea, each imported by its own name (this package re-exports nothing):
- format: the format's facts, once (page types, encodings, physical types, codecs, the
  Thrift field ids of the structs read or written, the compact protocol's type codes, ULEB128
  and zigzag varints, the page table's fields);
  standard library only;
- thrift: the compact protocol, both ways: footers as trees, and the skips the header walk uses;
- headers: the host walk over chunks' page headers into a PageTable; gpu_headers: its GPU twin,
  page CRC32s;
- decode: one page at a time (the reference steps); batch: a batch's pages by a few launches;
- encode: result columns into page bodies; snappy: the well-formedness walk of Snappy streams,
  on the host and on the GPU;
- gpu_pages: the launches of the CUDA page kernels (kernels/cuda/parquet_*.cu).
"""

// Parquet page headers (Thrift compact PageHeader) parsed on the GPU, and page CRC32s.

"""The Parquet layer: the read plan, page access, decompression and reader backends."""

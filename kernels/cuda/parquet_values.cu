// Parquet page bodies checked and decoded on the GPU, many pages per launch.

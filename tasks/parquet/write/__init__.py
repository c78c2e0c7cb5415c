"""Results into Parquet: their names and the writer's choices (results), the result tables
(tables), the page writer (page_writer), one file from several by copying pages (concat), and
atomic writes of result files (result_files)."""

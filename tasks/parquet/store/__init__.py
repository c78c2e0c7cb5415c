"""Where files live: paths and store URIs as the user gives them (locations), and the one
filesystem interface every file access goes through (filesystem: pyarrow.fs)."""

"""Results put into place: which paths may be written (output_paths), publishing while no other
run publishes there (publish), and a store's staged results (store_staging)."""

"""_buckets: see ARCHITECTURE.md."""

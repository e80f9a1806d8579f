"""_store: see ARCHITECTURE.md."""

"""_present: see ARCHITECTURE.md."""

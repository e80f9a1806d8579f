"""_export: see ARCHITECTURE.md."""

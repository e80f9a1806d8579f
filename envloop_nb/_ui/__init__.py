"""_ui: see ARCHITECTURE.md."""

"""_metrics: see ARCHITECTURE.md."""

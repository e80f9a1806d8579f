"""_datasets: see ARCHITECTURE.md."""

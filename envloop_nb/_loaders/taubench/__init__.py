"""τ-bench and τ²-bench results (``job``; τ²'s layouts in ``tau2_layout``)."""

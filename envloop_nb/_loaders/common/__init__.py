"""Shared by every reader: checked reading of bytes, text and JSON (``read``), value
and k checks (``values``), staging and the load's transaction (``stage``)."""

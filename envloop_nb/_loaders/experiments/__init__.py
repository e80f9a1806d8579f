"""The experiment document every experiment reader returns: checked (``doc``),
written (``store``), read from a table (``table``)."""

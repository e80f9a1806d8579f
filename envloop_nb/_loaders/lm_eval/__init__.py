"""lm-evaluation-harness output folders (``job``; ``files``, ``results``, ``text``)."""

"""Inspect AI logs: the job reader (``job``) over the ``.eval`` zip (``zip``, ``inflate``)
and ``.json`` (``json``) readers (``read``), the Python mapping (``map``) and its SQL
twin (``sql``), tasks (``tasks``); an Inspect log as an experiment (``experiment``)."""

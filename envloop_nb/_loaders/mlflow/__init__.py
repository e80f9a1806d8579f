"""MLflow: a run as a summarised job (``run``), traces as an experiment (``traces``)."""

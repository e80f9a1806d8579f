"""EnvLoop exports: a job (``job``) and an experiment (``experiment``)."""

"""Human annotation of a job's attempts (manual dimensions; see :mod:`.manual`)."""

"""Helpers for the envloop_nb lm-eval fixture tasks (read by lm-eval via ``!function``)."""


def alpha_docs(dataset):
    return dataset.filter(lambda doc: doc["subset"] == "alpha")


def beta_docs(dataset):
    return dataset.filter(lambda doc: doc["subset"] == "beta")


def char_overlap(references, predictions):
    """Share of the reference's distinct lower-case characters found in the prediction."""
    ref = set(str(references[0]).lower())
    pred = set(str(predictions[0]).lower())
    return len(ref & pred) / len(ref) if ref else 0.0

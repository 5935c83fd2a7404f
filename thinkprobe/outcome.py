"""Outcome validity (the `stats` stage and the report): do the indicators say anything about a wrong answer
beyond model and length? Cross-validated logistic regressions (scikit-learn does the fitting, scaling and
folds), and the same model + length baseline for the report's failure-risk table."""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from .auroc import factor_auroc
from .config import StatsSettings
from .indicators import INDICATORS
from .statuses import NOT_TESTABLE, TESTED

__all__ = ["outcome_validity", "model_length_features", "cross_validated_auroc"]


def outcome_validity(rows: Sequence[Mapping], settings: StatsSettings) -> dict:
    """Do the indicators say anything about a wrong answer beyond model and length? Out-of-fold
    AUROC (stratified folds, seeded) of two logistic regressions on the graded traces: model
    (one-hot) + log tokens, and the same + the 19 indicators (standardised), each the mean over
    cv_repeats draws of the folds (one draw's gain moved by 0.16 with its seed on 5 wrong answers).
    scikit-learn does the fitting, scaling and folds."""
    graded = [r for r in rows if r["correct"] is not None and r["tokens"] > 0
              and all(math.isfinite(r[name]) for name in INDICATORS)]
    wrong = np.array([not r["correct"] for r in graded], dtype=bool)
    out = {"status": TESTED, "n": len(graded), "n_wrong": int(wrong.sum()), "n_correct": int((~wrong).sum()),
           "n_wrong_no_answer": sum(1 for r in graded if r.get("no_answer")),
           "folds": settings.cv_folds, "seed": settings.cv_seed, "repeats": settings.cv_repeats,
           "auroc_model_length": None, "auroc_model_length_indicators": None, "gain": None,
           "factor_auroc": {by: factor_auroc(graded, wrong, by, settings.factor_seed, settings.factor_shuffles)
                            for by in ("domain", "group")}}
    if min(out["n_wrong"], out["n_correct"]) < max(settings.min_class, settings.cv_folds):
        out.update(status=NOT_TESTABLE, reason=f"fewer than {max(settings.min_class, settings.cv_folds)} "
                                                f"correct or wrong graded traces")
        return out
    base = model_length_features(graded)
    indicators = np.array([[r[name] for name in INDICATORS] for r in graded], dtype=np.float64)
    out["auroc_model_length"] = cross_validated_auroc(base, wrong, settings)
    out["auroc_model_length_indicators"] = cross_validated_auroc(np.hstack([base, indicators]), wrong, settings)
    out["gain"] = out["auroc_model_length_indicators"] - out["auroc_model_length"]
    return out


def model_length_features(rows: Sequence[Mapping]) -> np.ndarray:
    """Per row (tokens > 0): its model one-hot (the first model left out) and log tokens."""
    models = sorted({r["model"] for r in rows})
    onehot = np.array([[r["model"] == m for m in models[1:]] for r in rows], dtype=np.float64).reshape(len(rows), -1)
    return np.hstack([onehot, np.log([[r["tokens"]] for r in rows])])


def cross_validated_auroc(features: np.ndarray, wrong: np.ndarray, settings: StatsSettings) -> float:
    """Out-of-fold AUROC for a wrong answer of a standardised logistic regression on `features`: the mean
    over settings.cv_repeats draws of settings.cv_folds stratified folds (seeds cv_seed, cv_seed + 1...)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000, solver="newton-cholesky"))
    return float(np.mean([roc_auc_score(wrong, cross_val_predict(
        clf, features, wrong, method="predict_proba",
        cv=StratifiedKFold(settings.cv_folds, shuffle=True, random_state=settings.cv_seed + r))[:, 1])
        for r in range(max(1, settings.cv_repeats))]))

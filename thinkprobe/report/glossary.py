"""What every name in the report means: the glossary at its end and the hover text of each header
and variable name. Indicator and dimension definitions come from thinkprobe.indicators' records;
redundancy columns as in docs/redundancy.md.
"""
from __future__ import annotations

from ..indicators import dimension_glossary, indicator_glossary

__all__ = ["ANALYSES_GLOSSARY", "COVERAGE_GLOSSARY", "DECISIONS_GLOSSARY", "DIMENSION_GLOSSARY", "INDICATOR_GLOSSARY",
           "REDUNDANCY_GLOSSARY", "STATS_GLOSSARY", "TABLE_GLOSSARY", "GLOSSARY", "definition",
           "glossary_items"]

DIMENSION_GLOSSARY: dict[str, str] = dimension_glossary()
INDICATOR_GLOSSARY: dict[str, str] = indicator_glossary()


REDUNDANCY_GLOSSARY: dict[str, str] = {
    "Acc": "share of graded traces whose final answer is correct (its own n: only traces with a gold answer or label)",
    "Tokens": "tokens of all units", "|V|": "Thought Units", "Iso": "isolated (off-topic) units",
    "|E|": "typed edges", "D": "density |E| / (|V| - 1)", "in_max": "largest in-degree",
    "out_max": "largest out-degree", "Self": "share of repetition edges", "Back": "share of critique edges",
    "L_eff": "units on the Shortest Effective Path to the answer", "R": "redundancy (|V| - L_eff) / |V|",
    "Unc": "1 when more than two units hold a candidate answer",
    "DR": "transitions between successive candidate answers from correct to incorrect (a count per trace; a "
          "model's row: the mean count)", "SV": "transitions correct → correct (count per trace)",
    "EE": "transitions incorrect → incorrect (count per trace)", "EB": "transitions incorrect → correct (count per trace)",
}


STATS_GLOSSARY: dict[str, str] = {
    "ε²": "Kruskal-Wallis effect size H / (n − 1): the share of rank variance the grouping explains",
    "chance": "ε² that random group labels give on the same traces on average: (k − 1) / (n − 1) for k groups "
              "and n traces (exact for Kruskal-Wallis H, ties or not); it grows with the number of groups",
    "corrected": "ε² − chance ε²",
    "length-controlled": "the same test on what a straight-line fit on log tokens (whole run) leaves of the variable, "
                         "its ε² shown chance-corrected (ε² − chance ε², as the corrected columns); "
                         "not testable where most traces share one value (mostly 0): the residuals of those would "
                         "differ by length alone. Any test is 'not testable' with fewer than two groups of "
                         "stats.min_group traces (one model: no model test); the cell's hover text says why",
    "ratio": "corrected ε²(model) / corrected ε²(domain), none when both are under the floor",
    "bootstrap interval": "[low, high] after a corrected ε² or a ratio: the middle ci_level (95% by default) of its values over "
                          "resamples of the run's traces with replacement (percentile bootstrap; the same resamples "
                          "for model and domain, and for the length-controlled values the whole-run residuals "
                          "resampled); how much the number would move with other traces like these",
    "group": "a third grouping factor beside model and domain, named at profiling time (--group-field, --group or "
             "(?P<group>...) in --path-pattern: a design condition, a thinking budget); tested like the domain over "
             "the traces that have one; a run where no trace has one has no group tests",
    "split-half": "reliability of the model means: correlation of model means between random halves of each "
                  "model's traces, Spearman-Brown corrected",
    "ρ people": "agreement with people: Spearman ρ across traces between the variable computed on the linker's graphs "
                "and on a person's graphs of the same traces (ReasoningFlow's human annotator D), measured once for "
                "the linker's weights (its model folder's agreement.json), not on the run; a low ρ means differences in "
                "the variable may come from the parser rather than from the reasoning",
    "ρ silver": "the same against Gemini-3.1-pro's graphs of the ReasoningFlow traces the linker held out in training",
    "ICC": "intraclass correlation of traces of one model on one question, and one group where the run has groups (needs repeated answers to 5 or more such questions)",
    "AUROC": "how well a higher value flags a wrong answer (0.5 = no signal, below 0.5 = lower values flag it)",
    "cross-validated AUROC": "AUROC of a logistic regression's predictions for traces it was not fitted on (stratified "
                             "folds, drawn several times and averaged): model + log tokens (log tokens alone in a run of "
                             "one model), then the same + the 19 indicators",
    "gain": "the second cross-validated AUROC minus the first: what the indicators add to model and length",
    "DeLong's": "the 95% interval of an AUROC from each trace's placement among the traces of the other kind (the "
                "share of them it ranks above, ties counting one half), computed on the logit scale. Where every "
                "wrong trace ranks above every right one (or below), the placements leave no spread to estimate "
                "from: the interval is then the one these counts would give with a single (wrong, right) pair ranked "
                "the other way. Where traces name their question, the answers to one question (by any model) count "
                "as one cluster (Obuchowski's form, Student's t over the questions), so several answers to one "
                "question do not narrow it as if they were independent",
    "Friedman's test": "a test that the models differ, question by question: on each question answered by every "
                       "model, the models' mean values are ranked; the test asks whether some model ranks higher on "
                       "the questions more often than chance allows (scipy.stats.friedmanchisquare). A question's "
                       "difficulty, shared by every model, cancels out of it",
    "sign-flip test": "the test of P(a > b) = 0.5 question by question: each question's P(a > b) - 0.5 may as well "
                      "have had the other sign; p is the share of sign flips giving a mean at least as far from 0 "
                      "(exact; with one trace per model and question, the sign test on the questions that are not a draw)",
    "Hanley & McNeil": "standard error of an AUROC from its value and the counts of wrong and right traces; the margin "
                       "a gain must pass is 1.96 standard errors of the difference of the two AUROCs, taken as "
                       "independent (they score the same traces, so it is a conservative bound)",
    "log tokens alone explain": "R² of a least-squares line of the dimension on log tokens over the run's traces: the "
                                "share of its variance that length accounts for",
    "α": "the significance level (stats.alpha in the config, 0.05 by default): a * marks a Holm-adjusted p under it",
    "model a": "the first model of a compared pair (pairs in sorted order of the model names, capitals first)",
    "model b": "the second model of a compared pair",
    "P(a > b)": "probability of superiority: the chance that a random trace of model a has the higher value than a "
                "random trace of model b (ties count one half; 0.5 = no difference); where the two models answered the "
                "same questions, the mean over the questions of that chance among each question's traces (with one "
                "trace per model and question: the share of questions where a's trace is the higher); in the "
                "report's pairs table, raw and then (in brackets) on the length residuals, * where the test (Brunner-"
                "Munzel's; question by question, the sign-flip test over the questions) rejects P(a > b) = 0.5 "
                "(Holm-adjusted p under α over the variable's pairs) and the model test of that variable is significant "
                "(Kruskal-Wallis across traces; where every model answered the same questions, Friedman's test over "
                "those questions, Holm over the variables), ° "
                "where the pair's Holm-adjusted p is under α but that model test is not, † "
                "where the two models' lengths overlap too little for the length-controlled value to be more than an "
                "extrapolation; pairwise.csv adds its interval and Cliff's delta = 2 P(a > b) - 1",
}


ANALYSES_GLOSSARY: dict[str, str] = {
    "level": "a question's difficulty, 1 (every model that answered it was right) to 5 (none was): "
             "min(5, 1 + floor(5 (1 - s))) with s the mean over models of their accuracy on it; needs 3 models",
    "solve rate s": "mean over the models that answered a question (graded) of the share of their traces that are correct",
    "off-path unit": "a Thought Unit outside the Shortest Effective Path to the answer",
    "density": "share of a model's off-path units that fall in a position bin, divided by the bin width "
               "(1 everywhere = spread evenly)",
    "off_share": "share of the units in a position bin that are off the path",
    "position": "unit index / (units - 1): 0 is the first unit of a trace, 1 the last",
    "frontier": "a model on the Pareto frontier: no other model is at least as accurate with a mean R at least as low "
                "and better on one of the two (both over the model's graded traces, so R there can differ from the "
                "redundancy table's mean over all traces)",
    "node-type share": "units of a type / all units of the group (per domain, per model, or per position bin)",
    "n": "traces in the group; for the difficulty levels, traces of the model at that level",
}


COVERAGE_GLOSSARY: dict[str, str] = {
    "records": "records read from the file, or of the model (a record may give several traces: one per generation)",
    "traces": "traces profiled",
    "skipped": "records (or traces) left out, each listed in errors.jsonl with its file, record, field and reason",
    "reasons": "why they were left out, counted; 'answer without thinking': untagged text of a model whose other "
               "records carry reasoning, shorter than its median reasoning",
}


DECISIONS_GLOSSARY: dict[str, str] = {
    "anomaly": "robust Mahalanobis distance of a trace's 19 indicators from its own model's traces: robust z "
               "(median, 1.4826 x MAD; the standard deviation where the MAD is 0) per indicator, Ledoit-Wolf shrinkage covariance of the z clipped to ±3; "
               "empty for a model with too few traces (anomaly_reason says why); it has no fixed scale: read it "
               "beside its rank and the model's median anomaly (each trace's page gives both)",
    "anomaly_rank": "1 = the model's most unusual trace",
    "drivers": "the indicators with the largest |robust z| (at least the config's anomaly_driver_z), signed: "
               "+ above the model's median, - below; none where no single indicator reaches it (the trace is "
               "unusual in how its indicators combine); in the report's table \"reasoning is a program\" first marks "
               "a trace whose reasoning is code, not prose",
    "failure_risk": "probability that the final answer is wrong, from the reasoning's structure alone "
                    "(unit types, edges, length, candidate answers in the reasoning; never the answer section, "
                    "the gold answer or a grade), calibrated on its training corpora (left out of training, "
                    "ReasoningFlow, MiP-Overthinking and THINK-Bench, long thinking-model traces of math and "
                    "science, were ranked at AUROC 0.75-0.83, though THINK-Bench's lengths alone reach 0.85, the "
                    "five other corpora near chance, 0.50-0.63; mean calibration error 0.04-0.18): models/failure-risk; "
                    "empty for a reasoning of fewer units than any training trace (one unit)",
    "fit": "how well a model's profile matches what is wanted: the mean signed z over the wanted dimensions "
           "(--want), or minus the distance of its mean profile from a target (--like); higher fits better",
    "interval": "percentile bootstrap interval of the fit (stats bootstrap settings); questions are resampled, "
                "paired across models, when every model answered the same questions",
    "tier": "tier 1: the best-fitting model and, in order of fit, every model after it until the first one the run "
            "tells apart from it (the bootstrap interval of their difference in fit excludes 0); each later tier starts "
            "there, and ends at the first model told apart from its first; none (–) for a model with fewer than "
            "stats.select_min_traces traces",
    "accuracy": "share of the model's graded traces whose final answer is correct",
    "graded traces": "which of the run's graded traces a row of the failure-risk table covers: all, those the "
                     "failure-risk model was not trained on, or those of one domain or group",
    "AUROC of failure_risk [95%]": "how well failure_risk ranks the row's wrong answers above its right ones (0.5: "
                                   "no better than chance), with its 95% interval (DeLong's); none with "
                                   "fewer than 5 right or 5 wrong traces",
    "wrong": "graded traces whose final answer is wrong (a grade of the record or the matcher's verdict)",
    "share wrong": "the row's wrong answers over its graded traces",
    "mean failure_risk": "the mean of the row's failure_risk: near the share wrong where its probabilities hold for "
                         "this run",
    "AUROC of length alone": "the same traces ranked by their tokens alone (longer = riskier): the baseline "
                             "failure_risk has to beat",
    "AUROC of model + length, cross-validated": "the same traces ranked by a logistic regression on their model and "
                                                "log tokens, fitted on the row's grades and scored out of fold (as the "
                                                "outcome-validity section's): the stronger baseline, which learns "
                                                "from these grades what failure_risk never sees; – with fewer than 5 "
                                                "(or stats.cv_folds) traces of a kind",
    "models": "models with traces in the domain, ranked by fit",
    "tier 1": "the domain's best-fitting model and, in order of fit, the models after it up to, not including, "
              "the first one the run tells apart from it (see tier): a profile that fits, not a model that answers "
              "better",
    "told apart from the rest": "yes: tier 1 holds the best-fitting model alone (the next model with a tier by fit "
                                "is told apart from it; 'among the N with a tier' where models with too few traces "
                                "have none; '–' where no other model has one); no: tier 1 holds two or more models",
}


TABLE_GLOSSARY: dict[str, str] = {
    "units": "Thought Units of the trace (its reasoning and answer sections cut into units)",
    "edges": "typed edges of the trace's Thought Graph",
    "tokens": "tokens of all the trace's units, with the run's encoder tokenizer",
    "z-score": "(value − mean) / standard deviation, the mean and deviation of the reference: this run's traces, "
               "or the --norms file the run was given",
    "median z-score": "a model's median of an indicator over its traces, as a z-score over all traces of the run "
                      "(the indicators heat map)",
    "95% interval": "percentile bootstrap interval of a model's mean, in brackets after it",
    "p": "Kruskal-Wallis p-value; Holm p: adjusted for the number of tests (Holm-Bonferroni)",
    "unevenly crossed": "models and domains (or groups) whose traces are not spread alike: some model has no trace "
                        "of a domain others have, or Cramér's V of the model × domain counts is 0.3 or more",
    "Cramér's V": "association of two factors from the chi-square of their table of counts, 0 (independent) to 1",
    "ICC of a question's mean": "reliability of the mean over a (model, question) pair's repeated answers (none for a negative ICC)",
    "(model, question) pairs": "pairs with two or more traces, the clusters of the ICC",
    "traces per pair": "the adjusted mean cluster size k0 of the ICC",
    "AUROC (wrong), pooled [95%]": "AUROC of the indicator for a wrong answer over all graded traces, with its 95% "
                                   "interval (DeLong's)",
    "AUROC (wrong), within model [95%]": "AUROC over pairs of one model's traces only (a wrong and a correct one), "
                                         "combined across models by their numbers of pairs, with its 95% interval "
                                         "(computed as the pooled one's: DeLong's placements, answers to one question "
                                         "a cluster); it says whether the variable ranks a model's own wrong answers "
                                         "above its right ones, where the pooled AUROC also mixes in which models are "
                                         "wrong more often; none when the "
                                         "models with both kinds hold fewer than stats.min_class wrong or right "
                                         "traces (the outcome text counts the pairs)",
    "n (Acc)": "traces a column is known for, beside a column known for only some (n (Acc): graded traces)",
    "verdict": "a trace's outcome: correct / incorrect from the record's own grade, else its final answer checked "
               "against the gold answer; ungraded without either",
    "flags": "untagged (no reasoning field or tags: the whole text profiled), truncated (the reasoning is cut off), "
             "open_tag_missing (a closing reasoning tag without its opening one), duplicate_of (a renamed repeated id), renamed_from (an id given its file's prefix "
             "because other ids of that file repeated another file's), repaired_unicode (a lone surrogate, an "
             "emoji cut in two, replaced by U+FFFD in the fields named), summarised (the reasoning is a summary of "
             "the model's thinking, as a thought_summary field holds), before_reasoning (words the model wrote before "
             "the tag that opens its reasoning, in no section)",
    "score": "the linker's confidence in an edge (0-1)",
    "polarity": "a critique edge's stance toward its target: affirm, negate or uncertain",
}


GLOSSARY: dict[str, str] = {**DIMENSION_GLOSSARY, **INDICATOR_GLOSSARY, **REDUNDANCY_GLOSSARY, **STATS_GLOSSARY,
                            **ANALYSES_GLOSSARY, **TABLE_GLOSSARY, **COVERAGE_GLOSSARY, **DECISIONS_GLOSSARY}


def definition(term: str) -> str:
    """The glossary's definition of a table header ("n (Iso)" as "n (Acc)"); "" for none."""
    if term in GLOSSARY:
        return GLOSSARY[term]
    return GLOSSARY["n (Acc)"] if term.startswith("n (") else ""


def glossary_items() -> list[tuple[str, list[tuple[str, str]]]]:
    return [("Dimensions (5D cognitive profile: mean signed z-score of their indicators)", list(DIMENSION_GLOSSARY.items())),
            ("Indicators", list(INDICATOR_GLOSSARY.items())),
            ("Redundancy columns (CoTJudger's metrics)", list(REDUNDANCY_GLOSSARY.items())),
            ("Statistics", list(STATS_GLOSSARY.items())),
            ("CoTJudger's analyses", list(ANALYSES_GLOSSARY.items())),
            ("Tables and trace pages", list(TABLE_GLOSSARY.items())),
            ("Records read, profiled and skipped", list(COVERAGE_GLOSSARY.items())),
            ("Unusual traces, failure risk and model choice", list(DECISIONS_GLOSSARY.items()))]

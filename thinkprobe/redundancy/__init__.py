"""Redundancy suite (spec section 5): CoTJudger's metrics computed on a Thought Graph record
without a generative model. Reads the per-trace dict written to graphs.jsonl, finds candidate
answers (redundancy.extraction), extracts the Shortest Effective Path (SEP) and writes
redundancy.csv and model_redundancy.csv next to it.

Columns, in CoTJudger's order (Table 1), one row per trace:
  Acc      1 / 0: the final answer is correct (empty when there is no gold answer, no tests and
           no correctness field; 0 when none is found, empty under `unanswered: ungraded`)
  Tokens   tokens of all units (the run's tokenizer; whitespace words when a unit has no count)
  |V|      Thought Units;  |E| typed edges;  D = |E| / (|V| - 1) (0 for a single unit)
  Iso      isolated (off-topic) units, see below
  in_max / out_max   largest in- / out-degree over all typed edges
  Self     share of repetition edges;  Back  share of critique edges (0 without edges)
  L_eff    units in the SEP;  R = (|V| - L_eff) / |V|
  Unc      1 when more than two units hold a candidate answer
  DR / SV / EE / EB  transitions between successive candidate answers whose verdict is known:
           correct -> incorrect, correct -> correct, incorrect -> incorrect, incorrect -> correct
           (empty when correctness is unknown)

Verdicts. A record's own grade (thinkprobe.io.grades: `correct`, or a grade read as not graded,
such as SimpleQA's C) always decides the final verdict over matching (a final code answer with tests
excepted: its tests decide); an earlier candidate with the same value as the final one takes it too;
any other candidate keeps its gold verdict, else is incorrect when the final answer is graded
correct and unknown otherwise. Only a record without a grade is judged by matching: with a gold
answer every candidate is compared with it (answers_match); a code
candidate of a record that carries tests ("tests" / "test_cases" / "test") is run against them in
the sandbox instead, and only when the run allows it (RedundancyParams.allow_code_execution, set by
--allow-code-execution alone); otherwise it stays ungraded (reason NOT_ALLOWED), and so does the
trace when it is the final answer. With neither, every verdict is unknown. With a gold answer and
no candidate at all the final answer counts as incorrect.

Iso. Graph records carry no embeddings, so "low similarity" is lexical: a unit is isolated when
(a) structurally it has nothing beyond the backbone: no backward edge at either end, at most one
forward edge in and one out; and (b) fewer than `iso_overlap` (20%) of its content words (3+
letters, stop words removed, plural "s" dropped) occur in the question, and fewer than that share
in every other unit. Units without content words are not counted.

SEP target: the first candidate judged correct; otherwise (wrong or unknown correctness) the final
conclusion: the final candidate, else the last CON unit, else the last unit.

Modules: extraction (candidate answers), final (the final answer among them), normalise (answer
normalisation) and matching (answers_match), sandbox +
harness (code tests in a child process the operating system isolates), sep (the Shortest Effective
Path), annotate (the per-trace row and verdicts, Iso) and tables (redundancy.csv,
model_redundancy.csv).
"""
from .annotate import (COLUMNS, METRICS, RedundancyParams, annotate_record, has_gold, has_grade, isolated_units,
                       redundancy_row)
from .extraction import (Candidate, KIND_RANK, boxed_values, code_tests_of, conclusion_number,
                         find_candidates)
from .final import final_candidate
from .matching import answers_match, is_expression
from .normalise import normalise, to_number
from .sandbox import ALLOW_HINT, NOT_ALLOWED, code_not_run, isolation_problem, not_run_line, run_code_tests
from .sep import SEP, shortest_effective_path
from .tables import (MODEL_COLUMNS, format_model_table, model_means, table_row, write_redundancy,
                     write_redundancy_tables)

__all__ = ["COLUMNS", "METRICS", "MODEL_COLUMNS", "RedundancyParams", "SEP", "shortest_effective_path",
           "isolated_units", "redundancy_row", "annotate_record", "has_grade", "has_gold", "table_row", "write_redundancy",
           "write_redundancy_tables", "model_means", "format_model_table",
           "Candidate", "KIND_RANK", "find_candidates", "final_candidate", "code_tests_of", "boxed_values",
           "conclusion_number", "normalise", "to_number", "answers_match", "is_expression", "run_code_tests", "isolation_problem",
           "NOT_ALLOWED", "ALLOW_HINT", "not_run_line", "code_not_run"]

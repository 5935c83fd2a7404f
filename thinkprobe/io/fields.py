"""Where a record's parts are looked for, in detection order (spec section 6): the field names of its
reasoning, answer, model, domain, id, question and gold answer. Read by thinkprobe.io.detect, which
detects traces with them, and by thinkprobe.io.formats, which tells a file of sentence records from one
of traces; a module of its own, so that neither layer imports the other for them."""
from __future__ import annotations

__all__ = ["REASONING_FIELDS", "TAGGED_FIELDS", "ANSWER_FIELDS", "MODEL_FIELDS", "DOMAIN_FIELDS", "ID_FIELDS",
           "QUESTION_FIELDS", "GOLD_FIELDS"]


# Detection order (spec section 6). Additions found in real data: `think_content` (THINK-Bench),
# `model_answer` (MiP-Overthinking), `category` (THINK-Bench, Venhoff et al.), `Sampled_Model`, `Subject` (MR-BEN),
# `Question ID`, `Instruction`, `Correct Answer` (Schoenfeld episodes), `ground_truth_answer`, `model_output`,
# `model_output_answer_correctness` (ReasonEval).
REASONING_FIELDS = (
    "reasoning_content", "reasoning", "reasonings", "thinking", "thought", "thought_summary",
    "full_cot", "thinking_trajectories[0]", "think_content",
)


TAGGED_FIELDS = ("response", "output", "prediction", "content", "model_answer", "model_output")


ANSWER_FIELDS = ("content", "response", "output", "prediction")


MODEL_FIELDS = ("model", "model_name", "generator", "metadata.generator", "response.body.model", "eval.model",
                "Sampled_Model", "modelVersion", "model_version")  # modelVersion: Gemini


DOMAIN_FIELDS = ("domain", "task", "subject", "source", "problem_type", "category", "metadata.domain", "Subject")


ID_FIELDS = ("trace_id", "id", "doc_id", "uid", "_id", "uuid", "custom_id", "Question ID", "index", "responseId",
             "response_id")  # uuid: OpenR1; custom_id: OpenAI Batch; index: THINK-Bench (its 1-based record number)


# doc.*, target, exact_match: lm-eval samples files
QUESTION_FIELDS = ("question", "problem", "prompt", "raw_text.question", "doc.question", "doc.problem", "Question",
                   "doc.query", "Instruction", "instruction", "input")


# A field named for the gold answer comes before the bare "answer", which some records use for the
# model's own answer beside the gold (BIG-Bench Mistake: "answer" is PaLM 2's, "target" the gold).
# MR-BEN's corrected gold before its original, where set.
GOLD_FIELDS = ("correct_answer", "gold", "gold_answer", "metadata.correct_answer", "target",
               "Ground_Truth_Answer_Modified", "Ground_Truth_Answer", "Correct Answer", "ground_truth_answer", "answer")

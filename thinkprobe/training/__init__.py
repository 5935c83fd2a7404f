"""Training the linkers shipped in models/ on ReasoningFlow silver graphs (../shared/data); the
scripts scripts/train_parser.py and scripts/train_linker.py are its command lines.

- `parser_data`, `parser_fit`, `parser_cli`: the trace-level parser (prepare, train, ensemble, compare);
- `linker_data`, `linker`: the pair MLP and its type head (and a cross-encoder).
"""

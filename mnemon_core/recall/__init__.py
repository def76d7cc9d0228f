"""The read pipeline (spec §5.2), one module a step: `intent` → `anchors` (RRF) → `traverse` (beam search) →
`rerank` (+ WHY causal order) → `output`; `pipeline` runs them, `graph` memoises what they read, `config`
holds the numbers (`RecallConfig`, recipes `SPEC` and `HYBRID`), `results` the output models. Entry:
`Memory.retrieve` (the typed result) and `Memory.recall` (its shapes)."""

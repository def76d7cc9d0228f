"""The write pipeline (spec 5.1): validate → embed → diff → one transaction (insert, vector, the four graph
builders, EI, auto-prune, oplog) → candidates. One module a step."""

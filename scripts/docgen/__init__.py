"""The pages of docs/ that are generated, each from the code it documents (scripts/gen-docs.py writes them)."""

"""Tools the model can call: definitions, the jail every path goes through, handlers, and the executor."""

"""The workspace as tools reach it: the jail (the only way to a path), globs, the one safe writer, undo's checkpoints."""

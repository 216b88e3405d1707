"""Where commands run: bubblewrap, the staging overlay, its effects, the process runner."""

"""One spider per section of the demo site, each annotated with its provider level."""

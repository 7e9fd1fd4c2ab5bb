"""From outcomes to bytes: the families assembled (pure), then written in the text format."""

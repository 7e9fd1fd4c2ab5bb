"""The command-line tools beside the service itself."""

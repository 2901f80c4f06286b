"""The ``jitbench`` command line: every argparse grammar, and the one place that prints."""

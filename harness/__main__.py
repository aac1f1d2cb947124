"""``python -m harness``: the same command line as the ``harness`` script."""

from harness.cli import main

if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Information-set MCTS bot for dominoes (protocol v1), on harness.sdk and the harness engine.

    python3 bots/dominoes_ismcts.py [--iterations N] [--budget-ms MS] [--seed N] [--name NAME]

Needs the harness installed (`pip install -e .`); the search is in harness/sdk/ismcts.py.
"""

import sys

from harness.sdk.ismcts import bot_main

if __name__ == "__main__":
    sys.exit(bot_main("dominoes"))

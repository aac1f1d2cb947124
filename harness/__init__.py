"""tablebots: a referee, leagues and TrueSkill ratings for bots playing table games."""

__version__ = "0.1.0"

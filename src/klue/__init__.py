"""klue: the KLUE benchmark (Korean Language Understanding Evaluation), real, complete and fast."""

__version__ = "0.1.0"

"""`python -m klue`: the `klue` command, for environments where its script is not on PATH."""

from klue.cli import main

if __name__ == "__main__":
    main()

"""``python -m roundoff.cli``: the console script (`roundoff.cli.main.main`)."""

from roundoff.cli.main import main

if __name__ == "__main__":
    main()

"""``python -m xpuperf`` — same as the ``xpuperf`` console command."""

from xpuperf.cli.app import main

if __name__ == "__main__":
    main()

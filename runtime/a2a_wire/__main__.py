"""``python -m a2a_wire``: the ``a2a-wire`` command line (needs the ``cli`` extra)."""

from a2a_wire.cli import main

if __name__ == "__main__":
    main()

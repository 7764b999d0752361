"""``python -m inferd``: the ``inferd`` command (`inferd.cli`), as the tests and a bare checkout run it."""

from inferd.cli import main

main()

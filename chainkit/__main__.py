"""`python -m chainkit` is the `chainkit` command."""

import sys

from chainkit._cli.entry_point import main

if __name__ == "__main__":
    sys.exit(main())

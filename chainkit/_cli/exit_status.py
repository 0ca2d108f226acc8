"""The exit statuses of the `chainkit` command, as a shell reads them."""

import signal

SUCCESS = 0
FAILED = 1
USAGE = 2
WRITE_FAILED = 74  # EX_IOERR: a result could not be written
INTERRUPTED = 128 + signal.SIGINT  # 130, Ctrl-C
BROKEN_PIPE = 128 + signal.SIGPIPE  # 141, a writer whose reader went away
TERMINATED = 128 + signal.SIGTERM  # 143

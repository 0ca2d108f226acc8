"""`chainkit batch`: a chain run over every line of a JSONL file, into a resumable JSONL output.

`records` reads the input, `output` writes the results crash-safely, `runner` runs records
through a chain (the same code in every engine), and `job` ties them together.
chainkit.distributed places the runner in Ray actors; chainkit._cli.batch is the command line,
which imports this package (never the other way round).
"""

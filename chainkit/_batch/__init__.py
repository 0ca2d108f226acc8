"""`chainkit batch`: a chain run over every line of a JSONL file, into a resumable JSONL output.

`records` reads the input, `output` writes the results crash-safely, `runner` runs records
through a chain (the same code in every engine), `job` ties them together, and `command` is
the command line. chainkit.distributed places the runner in Ray actors.
"""

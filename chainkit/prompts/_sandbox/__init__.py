"""The jinja2 sandbox every jinja2 template renders in: its environments, and the budget that
bounds what one rendering may do (loops, output, operations), charged as the template runs."""

"""chainkit: composable LLM chains and agents you can read, debug and trust.

Import the subpackages you use: ``from chainkit import agents, chains, llms, tools``.
Importing chainkit loads neither openai nor jinja2.
"""

from chainkit._errors import ChainkitError

__version__ = "0.1.0"
__all__ = ["ChainkitError"]

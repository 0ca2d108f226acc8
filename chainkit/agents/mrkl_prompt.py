"""The default MRKL (ReAct) prompt: prefix, format instructions and suffix.

Variables: {tool_descriptions}, {tool_names}, {input} and {agent_scratchpad}.
"""

PREFIX = """Answer the following questions as well as you can. You can use these tools:

{tool_descriptions}"""

FORMAT_INSTRUCTIONS = """Reply in exactly this format:

Question: the question you must answer
Thought: think about what to do next
Action: the tool to use, one of [{tool_names}]
Action Input: the input to give the tool
Observation: the tool's result
... (Thought/Action/Action Input/Observation may repeat several times)
Thought: I now know the final answer
Final Answer: the final answer to the original question"""

SUFFIX = """Begin!

Question: {input}
Thought:{agent_scratchpad}"""

FINAL_ANSWER_REQUEST = (
    "\n\nI must now give my final answer based on the steps above.\nFinal Answer:"
)
"""Appended to the scratchpad when the executor's early stopping asks for a final answer."""

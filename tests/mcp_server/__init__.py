# The tools every client lists: the agent's, with no verify among them.
TOOLS = {
    "recall",
    "remember",
    "search",
    "forget",
    "list_memories",
    "memories_by_tag",
    "expiring",
    "check_messages",
    "reply",
}

//! Agents: the handler trait, built-in handlers and the agent session.

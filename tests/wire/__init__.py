"""Loopback servers that speak the Anthropic and OpenAI streaming wire formats, scripted per test."""

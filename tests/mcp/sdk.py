"""What the MCP test clients share: attributes under the SDK's 2.x (snake_case) or 1.x
(camelCase) names, and tool calls that must succeed or fail."""


def attr(obj, *names):
    """An attribute under its mcp 2.x or 1.x name."""
    for n in names:
        if hasattr(obj, n):
            return getattr(obj, n)
    return None


async def ok(c, name, **args):
    """Calls a tool that must succeed; its structured result (a JSON object)."""
    r = await c.call_tool(name, args)
    assert not attr(r, "is_error", "isError"), f"{name}({args}) failed: {r}"
    s = attr(r, "structured_content", "structuredContent")
    assert isinstance(s, dict), f"{name}: no structured result: {r}"
    return s


async def failed(c, name, **args):
    """Calls a tool that must fail (an isError result); its structured result."""
    r = await c.call_tool(name, args)
    assert attr(r, "is_error", "isError"), f"{name}({args}) did not fail: {r}"
    return attr(r, "structured_content", "structuredContent")

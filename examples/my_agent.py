"""A skill of your own in a dozen lines: answer with the text reversed (README, "Your own executor").

Run it with ``a2a-wire serve --config examples/my_agent.toml``; the configuration names it as
``my_agent:Reverse`` and the folder of the configuration file is importable.
"""

from a2a_wire.server import AgentExecutor, EventQueue, RequestContext, TaskUpdater


class Reverse(AgentExecutor):
    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        assert context.message is not None
        text = "".join(part.text or "" for part in context.message.parts)
        task = TaskUpdater(events, context)
        await task.start_work("Reversing")
        await task.add_artifact(text[::-1], name="reversed")
        await task.complete()

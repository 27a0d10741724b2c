"""Skills of your own in a few lines each (README, "Your own executor").

Run them with ``a2a-wire serve --config examples/my_agent.toml``; the configuration names them
as ``my_agent:Reverse`` and ``my_agent:ReverseWords``, and the folder of the configuration file
is importable.
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


class ReverseWords(AgentExecutor):
    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        assert context.message is not None
        text = "".join(part.text or "" for part in context.message.parts)
        words = text.split()[::-1] or [text]
        task = TaskUpdater(events, context)
        await task.start_work(f"Reversing {len(words)} words")
        # The first chunk makes the artifact; each later one appends to it by the id it got.
        artifact_id = ""
        for i, word in enumerate(words):
            artifact_id = await task.add_artifact(
                word if i == 0 else " " + word,
                artifact_id=artifact_id,
                name="reversed",
                append=i > 0,
                last_chunk=i == len(words) - 1,
            )
        await task.complete()

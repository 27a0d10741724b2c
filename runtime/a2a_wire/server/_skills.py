"""Skills: what an agent offers (``AgentSkill`` on the card, spec 4.4.5) and who serves each one.

A :class:`Skill` pairs the card's ``AgentSkill`` with its executor and says whether it is
public; :meth:`SkillSet.select` routes a message to exactly one skill and checks its media
types (spec 3.1.1, 13.4). An unknown skill and a forbidden one give the same error, so hidden
skills cannot be probed. The rules are listed in docs/server.md, "Skills".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from a2a_wire._protocol.wire import SKILL_ID_KEY
from a2a_wire.codec import UNSET
from a2a_wire.errors import ContentTypeNotSupportedError, InvalidParamsError
from a2a_wire.server._executor import AgentExecutor, EventQueue, RequestContext
from a2a_wire.types import AgentSkill, Message, Part, Role, Task

__all__ = ["SKILL_ID_KEY", "Skill", "SkillRouter", "SkillSet", "media_matches"]


@dataclass(frozen=True, slots=True)
class Skill:
    """One published skill and the executor serving it.

    Attributes:
        card_skill: The ``AgentSkill`` shown on the card (id, name, description, tags,
            examples, input and output modes).
        executor: The agent that serves messages routed to this skill.
        public: Listed on the public card and usable without authentication; otherwise shown
            only on the extended card, to clients permitted to use it.
        default: The skill for messages that name none (at most one skill per set).
    """

    card_skill: AgentSkill
    executor: AgentExecutor
    public: bool = True
    default: bool = False

    @property
    def id(self) -> str:
        """The skill id (``AgentSkill.id``)."""
        return self.card_skill.id


def _normal(media_type: str) -> str:
    base = media_type.split(";", 1)[0].strip().lower()
    return base if "/" in base or not base else base + "/*"


def media_matches(offered: str, wanted: str) -> bool:
    """Whether two media types (either may be a ``type/*`` or ``*/*`` range) overlap.

    Args:
        offered: A mode a skill declares.
        wanted: A part's media type or an accepted output mode.

    Returns:
        ``True`` when some concrete media type matches both.
    """
    a_type, _, a_sub = _normal(offered).partition("/")
    b_type, _, b_sub = _normal(wanted).partition("/")
    if "*" not in (a_type, b_type) and a_type != b_type:
        return False
    return "*" in (a_sub, b_sub) or a_sub == b_sub


def _part_media_type(part: Part) -> str | None:
    if part.media_type:
        return part.media_type
    if part.text is not None:
        return "text/plain"
    if part.data is not UNSET:
        return "application/json"
    return None


def _requested_skill(message: Message, field: str = "message.metadata.skillId") -> str:
    metadata = message.metadata or {}
    value = metadata.get(SKILL_ID_KEY)
    if value is None:
        return ""
    if not isinstance(value, str) or not value:
        raise InvalidParamsError(
            "metadata.skillId must be a non-empty string", violations=[(field, "not a skill id")]
        )
    return value


class SkillSet:
    """The skills of a server, with the rules of docs/server.md, "Skills".

    Args:
        skills: The skills; ids must be unique and non-empty, at most one ``default``.
        default_input_modes: The card's ``defaultInputModes``.
        default_output_modes: The card's ``defaultOutputModes``.

    Raises:
        ValueError: no skills, an empty or repeated id, or more than one default.
    """

    def __init__(
        self,
        skills: Sequence[Skill],
        *,
        default_input_modes: Iterable[str] = (),
        default_output_modes: Iterable[str] = (),
    ) -> None:
        if not skills:
            raise ValueError("a skill set needs at least one skill")
        self.by_id: dict[str, Skill] = {}
        for skill in skills:
            if not skill.id or not skill.card_skill.name:
                raise ValueError("every skill needs an id and a name")
            if skill.id in self.by_id:
                raise ValueError(f"skill id {skill.id!r} is used twice")
            self.by_id[skill.id] = skill
        defaults = [s for s in skills if s.default]
        if len(defaults) > 1:
            raise ValueError("at most one skill may be the default")
        self.default = defaults[0] if defaults else None
        self.input_modes = tuple(default_input_modes)
        self.output_modes = tuple(default_output_modes)

    @property
    def public_ids(self) -> frozenset[str]:
        """Ids of the public skills."""
        return frozenset(i for i, s in self.by_id.items() if s.public)

    def allowed_ids(self, permitted: frozenset[str] | None, authenticated: bool) -> frozenset[str]:
        """The skills a caller may use.

        Args:
            permitted: A registered client's skill ids (``None``: every skill).
            authenticated: Whether the caller is a registered client; others get the public
                skills.

        Returns:
            The ids, limited to skills that exist.
        """
        if not authenticated:
            return self.public_ids
        if permitted is None:
            return frozenset(self.by_id)
        return frozenset(i for i in permitted if i in self.by_id)

    def card_skills(self, allowed: frozenset[str] | None = None) -> list[AgentSkill]:
        """The ``AgentSkill`` list for a card: the public skills, or those in ``allowed``."""
        ids = self.public_ids if allowed is None else allowed
        return [s.card_skill for i, s in self.by_id.items() if i in ids]

    def select(
        self,
        message: Message,
        allowed: frozenset[str],
        *,
        task: Task | None = None,
        accepted_output_modes: Sequence[str] = (),
    ) -> Skill:
        """Route ``message`` and check its media types (docs/server.md, "Skills").

        Args:
            message: The client's message.
            allowed: The skills the caller may use.
            task: The task the message continues, if any.
            accepted_output_modes: ``configuration.acceptedOutputModes`` of the request.

        Returns:
            The skill that serves the message.

        Raises:
            InvalidParamsError: the named skill is unknown or not permitted, none can be
                chosen, or a follow-up names another skill than its task's.
            ContentTypeNotSupportedError: a part or the accepted output modes do not fit.
        """
        requested = _requested_skill(message)
        if task is not None:
            skill = self._task_skill(task, allowed, message)
            if requested and requested != skill.id:
                raise InvalidParamsError(
                    f"Task {task.id} is served by skill {skill.id!r}, not {requested!r}",
                    violations=[("message.metadata.skillId", f"the task's skill is {skill.id}")],
                )
        elif requested:
            skill = self._named(requested, allowed)
        else:
            skill = self._fallback(allowed)
        self._check_media(skill, message, accepted_output_modes)
        return skill

    def task_skill_id(self, task: Task, allowed: frozenset[str]) -> str:
        """The id of the skill serving ``task`` (for a cancel); ``""`` when none fits."""
        try:
            return self._task_skill(task, allowed, None).id
        except InvalidParamsError:
            return ""

    def _task_skill(self, task: Task, allowed: frozenset[str], message: Message | None) -> Skill:
        first = task.history[0] if task.history else None
        if first is not None and first.role == Role.USER:
            named = _requested_skill(first, "task.history[0].metadata.skillId")
            if named:
                return self._named(named, allowed)
        if first is None and message is not None and _requested_skill(message):
            return self._named(_requested_skill(message), allowed)
        return self._fallback(allowed)

    def _named(self, skill_id: str, allowed: frozenset[str]) -> Skill:
        skill = self.by_id.get(skill_id)
        if skill is None or skill_id not in allowed:
            shown = skill_id[:100]
            raise InvalidParamsError(
                f"Skill {shown!r} does not exist or is not available to this caller",
                violations=[("message.metadata.skillId", f"unknown skill {shown!r}")],
            )
        return skill

    def _fallback(self, allowed: frozenset[str]) -> Skill:
        if len(allowed) == 1:
            return self.by_id[next(iter(allowed))]
        if self.default is not None and self.default.id in allowed:
            return self.default
        if not allowed:
            raise InvalidParamsError(
                "No skill is available to this caller",
                violations=[("message.metadata.skillId", "no skill available")],
            )
        ids = ", ".join(sorted(allowed))
        raise InvalidParamsError(
            f"Name the skill in message.metadata.skillId; available: {ids}",
            violations=[("message.metadata.skillId", "required: more than one skill fits")],
        )

    def _check_media(self, skill: Skill, message: Message, accepted: Sequence[str]) -> None:
        modes = skill.card_skill.input_modes or self.input_modes
        if modes:
            for part in message.parts:
                media = _part_media_type(part)
                if media is not None and not any(media_matches(m, media) for m in modes):
                    raise ContentTypeNotSupportedError(
                        f"Skill {skill.id!r} does not accept {media[:100]!r}",
                        metadata={"skillId": skill.id, "mediaType": media[:100]},
                    )
        outputs = skill.card_skill.output_modes or self.output_modes
        if accepted and outputs and not any(media_matches(o, a) for o in outputs for a in accepted):
            raise ContentTypeNotSupportedError(
                f"Skill {skill.id!r} produces none of the accepted output modes",
                metadata={"skillId": skill.id, "outputModes": ",".join(outputs)},
            )


class SkillRouter(AgentExecutor):
    """The executor of a server with skills: hands each request to its skill's executor.

    The server fills :attr:`~a2a_wire.server._executor.RequestContext.skill_id` before calling.

    Args:
        skills: The skill set.
    """

    def __init__(self, skills: SkillSet) -> None:
        self.skills = skills

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        """Run the routed skill's executor.

        Args:
            context: The request; its ``skill_id`` names the skill.
            events: Where the reply or the task's events go.
        """
        await self.skills.by_id[context.skill_id].executor.execute(context, events)

    async def cancel(self, context: RequestContext, events: EventQueue) -> None:
        """Run the cancel hook of the task's skill (nothing when the task has none).

        Args:
            context: The task to cancel.
            events: Where a CANCELED status may go.
        """
        skill = self.skills.by_id.get(context.skill_id)
        if skill is not None:
            await skill.executor.cancel(context, events)
